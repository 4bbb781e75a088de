// The loopback models' answers as the providers stream them (`stream: true`):
// server-sent events of OpenAI Chat Completions chunks, Anthropic Messages
// events and OpenAI Responses events, built from the answer the model would
// have sent whole, each text cut into several deltas, so that the SDKs'
// stream readers put the same answer back together.

/** Cuts s into pieces of about n characters (at least one piece). */
function pieces(s, n = 7) {
    const out = [];
    for (let i = 0; i < s.length; i += n) out.push(s.slice(i, i + n));
    return out.length ? out : [''];
}

function chatEvents(reply) {
    const base = { id: reply.id, object: 'chat.completion.chunk', created: reply.created, model: reply.model };
    const choice = reply.choices[0], m = choice.message;
    const chunk = (delta, finish = null) => ({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
    const ev = [chunk({ role: 'assistant', content: '', refusal: null })];
    if (typeof m.content === 'string') for (const p of pieces(m.content)) ev.push(chunk({ content: p }));
    (m.tool_calls ?? []).forEach((c, index) => {
        ev.push(chunk({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.function.name, arguments: '' } }] }));
        for (const p of pieces(c.function.arguments)) ev.push(chunk({ tool_calls: [{ index, function: { arguments: p } }] }));
    });
    ev.push(chunk({}, choice.finish_reason));
    return ev.map(e => `data: ${JSON.stringify(e)}\n\n`).concat(['data: [DONE]\n\n']);
}

function messagesEvents(reply) {
    const out = [];
    const send = (type, data) => out.push(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
    send('message_start', { message: { ...reply, content: [], stop_reason: null, stop_sequence: null } });
    reply.content.forEach((b, index) => {
        if (b.type === 'text') {
            send('content_block_start', { index, content_block: { type: 'text', text: '' } });
            for (const p of pieces(b.text)) send('content_block_delta', { index, delta: { type: 'text_delta', text: p } });
        } else if (b.type === 'thinking') {
            send('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } });
            for (const p of pieces(b.thinking, 400)) send('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: p } });
            send('content_block_delta', { index, delta: { type: 'signature_delta', signature: b.signature } });
        } else if (b.type === 'tool_use') {
            send('content_block_start', { index, content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} } });
            for (const p of pieces(JSON.stringify(b.input))) send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: p } });
        } else {
            send('content_block_start', { index, content_block: b });
        }
        send('content_block_stop', { index });
    });
    send('message_delta', { delta: { stop_reason: reply.stop_reason, stop_sequence: reply.stop_sequence ?? null },
                            usage: { output_tokens: reply.usage?.output_tokens ?? 1 } });
    send('message_stop', {});
    return out;
}

function responsesEvents(reply) {
    const out = [];
    let seq = 0;
    const send = (type, data) => out.push(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`);
    const head = { ...reply, status: 'in_progress', output: [] };
    send('response.created', { response: head });
    send('response.in_progress', { response: head });
    reply.output.forEach((item, output_index) => {
        if (item.type === 'message') {
            send('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', content: [] } });
            item.content.forEach((part, content_index) => {
                send('response.content_part.added', { item_id: item.id, output_index, content_index, part: { ...part, text: '' } });
                for (const p of pieces(part.text ?? ''))
                    send('response.output_text.delta', { item_id: item.id, output_index, content_index, delta: p, logprobs: [] });
                send('response.output_text.done', { item_id: item.id, output_index, content_index, text: part.text ?? '', logprobs: [] });
                send('response.content_part.done', { item_id: item.id, output_index, content_index, part });
            });
        } else if (item.type === 'function_call') {
            send('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', arguments: '' } });
            for (const p of pieces(item.arguments))
                send('response.function_call_arguments.delta', { item_id: item.id, output_index, delta: p });
            send('response.function_call_arguments.done', { item_id: item.id, output_index, arguments: item.arguments });
        } else {
            send('response.output_item.added', { output_index, item });
        }
        send('response.output_item.done', { output_index, item });
    });
    send('response.completed', { response: reply });
    return out;
}

/** The answer `reply` of api ('openai', 'anthropic', 'openai-responses') as its events, in order. */
export function eventsOf(api, reply) {
    return api === 'openai' ? chatEvents(reply) : api === 'anthropic' ? messagesEvents(reply) : responsesEvents(reply);
}

/**
 * Streams reply on res as the provider would, an event per write, waiting
 * for each write to be taken (`delayMs` between events when given).
 */
export async function streamReply(res, api, reply, { delayMs = 0 } = {}) {
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
    for (const e of eventsOf(api, reply)) {
        if (!res.write(e)) await new Promise(resolve => res.once('drain', resolve));
        if (delayMs) await new Promise(resolve => setTimeout(resolve, delayMs));
    }
    res.end();
}
