// Writes the benchmark corpus: texts shaped like an agent's context (prose,
// code, JSON, logs, other scripts), separated by NUL bytes, until the file
// holds at least the size asked for. Fixed seed: the same corpus on every
// machine. No text repeats: each is drawn word by word, so no tokenizer's
// cache can serve a whole text twice. Words come from the repository's own
// sources and docs, so their statistics are those of real English and code.
//   node corpus.mjs <source root> <bytes> > corpus.bin
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { generator } from '../../tests/xorshift.mjs'

const [root, size] = [process.argv[2], Number(process.argv[3])]
const { rnd, below, pick } = generator(0x9e3779b9)

const files = execFileSync('git', ['-C', root, 'ls-files'], { encoding: 'utf8' })
  .split('\n').filter((f) => /\.(c|h|md|py|sh|yaml)$/.test(f))
const words = []
for (const f of files) {
  for (const w of readFileSync(join(root, f), 'utf8').split(/\s+/)) if (w && w.length < 40) words.push(w)
}
const cjk = () => String.fromCodePoint(0x4e00 + below(0x51a5))
const hangul = () => String.fromCodePoint(0xac00 + below(11172))
const arabic = () => String.fromCodePoint(0x621 + below(42))
const sentence = () => {
  const n = 5 + below(20)
  let s = ''
  for (let i = 0; i < n; i++) s += (i ? ' ' : '') + pick(words)
  return s + pick(['.', '.', '.', '?', '!', ':', ','])
}
const kinds = [
  () => Array.from({ length: 3 + below(12) }, sentence).join(' ') + '\n',
  () => Array.from({ length: 5 + below(30) }, () => '    '.repeat(below(3)) + Array.from({ length: 2 + below(8) }, () => pick(words)).join(pick([' ', '(', ', ', '.', ' = ']))).join('\n') + '\n',
  () => JSON.stringify(Object.fromEntries(Array.from({ length: 3 + below(10) }, () => [pick(words), pick([below(1e6), pick(words), rnd() < 0.5, [below(100), pick(words)]])])), null, 2),
  () => Array.from({ length: 5 + below(20) }, () => `2026-12-01T10:${String(below(60)).padStart(2, '0')}:${String(below(60)).padStart(2, '0')}.${below(1000)}Z ${pick(['INFO', 'WARN', 'ERROR'])} ${pick(words)} ${pick(words)} id=${below(1e9).toString(16)} took ${below(5000)}ms`).join('\n') + '\n',
  () => Array.from({ length: 20 + below(200) }, () => pick([cjk, cjk, cjk, hangul, arabic, () => ' ', () => '。'])()).join(''),
]
const out = []
let bytes = 0
while (bytes < size) {
  const t = pick(kinds)()
  const b = Buffer.from(t, 'utf8')
  out.push(b, Buffer.from([0]))
  bytes += b.length + 1
}
process.stdout.write(Buffer.concat(out))
