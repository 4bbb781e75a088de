// The benchmark's model: answers a Chat Completions call at once with a
// fixed answer, or streamed, its first event at once and the rest 20 ms
// later, reading the whole request first as any server does. Prints its
// port and serves until SIGTERM.
import http from 'node:http';

const answer = JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion', created: 1700000000, model: 'gpt-4o',
    choices: [{ index: 0, message: { role: 'assistant', content: 'done', refusal: null }, logprobs: null, finish_reason: 'stop' }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });
const chunk = (delta, finish = null) => `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk',
    created: 1700000000, model: 'gpt-4o', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;

const server = http.createServer((req, res) => {
    const parts = [];
    req.on('data', c => parts.push(c));
    req.on('end', () => {
        const stream = Buffer.concat(parts).includes('"stream":true');
        if (!stream) {
            res.writeHead(200, { 'Content-Type': 'application/json' });
            return res.end(answer);
        }
        res.writeHead(200, { 'Content-Type': 'text/event-stream' });
        res.write(chunk({ role: 'assistant', content: '' }));
        setTimeout(() => res.end(chunk({ content: 'done' }) + chunk({}, 'stop') + 'data: [DONE]\n\n'), 20);
    });
});
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
