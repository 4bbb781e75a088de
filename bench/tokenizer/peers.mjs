// Times the peer tokenizers on the benchmark corpus and on the adversarial
// texts, one after the other on one thread, each once: gpt-tokenizer 4.0.0,
// js-tiktoken 1.0.21 and tiktoken 1.0.22 (OpenAI's Rust tokenizer built to
// WASM). Prints one JSON object of figures.
//   node peers.mjs <encoding> <corpus.bin> <adversarial sizes, comma-separated>
import { readFileSync } from 'node:fs'
import { getEncoding } from 'js-tiktoken'
import { get_encoding } from 'tiktoken'

const [encoding, corpusPath, sizesArg] = process.argv.slice(2)
const { countTokens } = await import(`gpt-tokenizer/encoding/${encoding}`)
const js = getEncoding(encoding)
const tk = get_encoding(encoding)
const ordinary = { disallowedSpecial: new Set() }
const peers = {
  'gpt-tokenizer 4.0.0': (t) => countTokens(t, ordinary),
  'js-tiktoken 1.0.21': (t) => js.encode(t, [], []).length,
  'tiktoken 1.0.22': (t) => tk.encode_ordinary(t).length,
}
const texts = readFileSync(corpusPath).toString('utf8').split('\0').filter((t) => t.length)
const bytes = texts.reduce((n, t) => n + Buffer.byteLength(t), 0)
const result = { corpus: {}, adversarial: {} }
for (const [name, count] of Object.entries(peers)) {
  count('warm up')
  const t0 = process.hrtime.bigint()
  let tokens = 0
  for (const t of texts) tokens += count(t)
  const s = Number(process.hrtime.bigint() - t0) / 1e9
  result.corpus[name] = { texts: texts.length, bytes, tokens, seconds: s }
}
// The adversarial texts, n bytes each, as tokenizer_bench.c makes them.
const make = (kind, n) => {
  if (kind === 'one letter') return 'a'.repeat(n)
  let x = 12345
  const next = () => {
    x = (x * 1103515245 + 12345) >>> 0
    return x >>> 16
  }
  if (kind === 'letters, no spaces') return Array.from({ length: n }, () => String.fromCharCode(97 + (next() % 26))).join('')
  return '日'.repeat(Math.floor(n / 3))
}
for (const size of sizesArg.split(',').map(Number)) {
  for (const kind of ['one letter', 'letters, no spaces', 'one CJK character']) {
    const text = make(kind, size)
    for (const [name, count] of Object.entries(peers)) {
      const t0 = process.hrtime.bigint()
      const tokens = count(text)
      const s = Number(process.hrtime.bigint() - t0) / 1e9
      ;((result.adversarial[name] ??= {})[kind] ??= {})[size] = { tokens, seconds: s }
    }
  }
}
tk.free()
console.log(JSON.stringify(result))
