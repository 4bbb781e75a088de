// A loopback model whose answers a test writes: each request is held to the
// provider's rules (tests/clients/mock_provider.mjs: refused with the
// provider's 400 when broken), recorded with its headers, and answered with
// what answer(body, n) returns, streamed as the provider streams it when the
// request asks (tests/clients/mock_stream.mjs). answer may also return
// {fail: {status, body}} for an error of its own, {hang: true} to never answer,
// or {custom: res => ...} to write the answer itself.
import http from 'node:http';
import { checkAnthropic, checkOpenAI, checkResponses } from '../clients/mock_provider.mjs';
import { streamReply } from '../clients/mock_stream.mjs';

const CHECKS = { openai: checkOpenAI, anthropic: checkAnthropic, 'openai-responses': checkResponses };
const PATHS = { '/v1/chat/completions': 'openai', '/v1/messages': 'anthropic', '/v1/responses': 'openai-responses' };

export async function startScriptedModel(answer) {
    const requests = [];
    const sockets = new Set();
    const server = http.createServer((req, res) => {
        const chunks = [];
        req.on('data', c => chunks.push(c));
        req.on('end', async () => {
            const api = PATHS[req.url] ?? null;
            const raw = Buffer.concat(chunks).toString('utf8');
            const entry = { api, url: req.url, method: req.method, headers: req.headers, raw, body: null, error: null };
            requests.push(entry);
            const send = (status, obj) => {
                res.writeHead(status, { 'Content-Type': 'application/json', 'x-request-id': `req_${requests.length}` });
                res.end(JSON.stringify(obj));
            };
            try {
                entry.body = JSON.parse(raw);
                if (!api) throw new Error(`no route ${req.url}`);
                CHECKS[api](entry.body);
            } catch (e) {
                entry.error = e.message;
                return send(400, api === 'anthropic' ? { type: 'error', error: { type: 'invalid_request_error', message: e.message } }
                    : { error: { message: e.message, type: 'invalid_request_error', param: null, code: null } });
            }
            const out = await answer(entry.body, requests.length, entry);
            if (out?.hang) return; // the test's socket close ends it
            if (out?.custom) return out.custom(res);
            if (out?.fail) return send(out.fail.status, out.fail.body);
            entry.reply = out;
            if (entry.body.stream === true) return streamReply(res, api, out);
            send(200, out);
        });
    });
    server.on('connection', s => { sockets.add(s); s.on('close', () => sockets.delete(s)); });
    await new Promise(resolve => server.listen(0, '127.0.0.1', resolve));
    return {
        requests,
        url: `http://127.0.0.1:${server.address().port}`,
        close: () => new Promise(resolve => { for (const s of sockets) s.destroy(); server.close(resolve); }),
    };
}
