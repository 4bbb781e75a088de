// compactd's o200k_base and cl100k_base counts against gpt-tokenizer 4.0.0
// on 1,000,000 generated texts and on families of texts enumerated where
// the pre-tokenizer patterns' alternatives meet: every ASCII text of one
// and two characters, every three-character text over the characters at
// the alternatives' edges, every contraction in every case between every
// kind of neighbour, every run of ASCII white space up to four long before
// each kind of character, runs of punctuation and line breaks and slashes,
// case changes, digit runs of every length. Most texts are ASCII, which
// compactd splits by hand (service/tokenizer/pretok_ascii.c); the rest mix
// in letters, marks, digits and white space of other scripts, which go
// through the patterns in PCRE2. Any difference fails. A text that holds
// U+FEFF, U+0085 or U+017F, on which gpt-tokenizer is known to count
// otherwise than OpenAI's tiktoken (exactness.mjs says why), is compared
// with tiktoken 1.0.22 instead.
//   node differential.mjs <count_texts binary> <ranks folder> [texts [skip]]
// skip: the generator's first skip texts are made and not compared, so that
// the same million can be compared in parts side by side (the deep pass's
// four); the enumerated families are compared with the part at 0.
import { countTokens as gptO200k } from 'gpt-tokenizer/encoding/o200k_base'
import { countTokens as gptCl100k } from 'gpt-tokenizer/encoding/cl100k_base'
import { get_encoding } from 'tiktoken'
import { generator } from '../../../xorshift.mjs'
import { compactdCounts } from './count_texts.mjs'

const [countTexts, ranksDir, wanted, skipped] = process.argv.slice(2)
const TOTAL = Number(wanted || 1000000)
const SKIP = Number(skipped || 0)
const BATCH = 50000
const ordinary = { disallowedSpecial: new Set() } // special-token text is text
const tiktoken = { o200k_base: get_encoding('o200k_base'), cl100k_base: get_encoding('cl100k_base') }
const gpt = { o200k_base: gptO200k, cl100k_base: gptCl100k }
const explained = (t) => /[\ufeff\u0085\u017f]/.test(t)

// ---- Generated texts (xorshift32, the same on every run) ----
const { rnd, below, pick } = generator(0x1d1ff3a7)
const chars = (s) => Array.from(s)
const repeat = (n, f) => Array.from({ length: n }, f).join('')
const range = (lo, hi) => String.fromCodePoint(lo + below(hi - lo + 1))

// ASCII where the alternatives meet: both cases, the contraction letters,
// the apostrophe, digits, every ASCII white space, the slash o200k_base
// keeps after punctuation, punctuation, control bytes.
const edge = chars("aAbBsStTmMdDrReEvVlLxXzZ'''0123456789      \t\n\n\r\v\f//.,;:!?-_()[]{}\"<>=+*&|\\@#$%^`~\x00\x01\x1b\x1f\x7f")
const contractions = ['s', 't', 're', 've', 'm', 'll', 'd']
const cased = (w) => repeat(w.length, (_, i) => (rnd() < 0.5 ? w[i] : w[i].toUpperCase()))
const word = () => {
  const w = repeat(1 + below(9), () => pick(chars('abcdefghijklmnopqrstuvwxyz')))
  return pick([w, w, w.toUpperCase(), w[0].toUpperCase() + w.slice(1), cased(w)])
}
const spaceRun = () => repeat(1 + below(5), () => pick([' ', ' ', ' ', '\t', '\n', '\r', '\r\n', '\v', '\f']))
const digits = () => repeat(1 + below(12), () => pick(chars('0123456789')))
const punctRun = () => repeat(1 + below(4), () => pick(chars('.,;:!?-_()[]{}"<>=+*&|\\@#$%^`~/'))) + pick(['', '', '\n', '\r\n', '/', '//', '\n/'])
const asciiChunk = () => pick([word, word, word, () => ' ' + word(), spaceRun, digits, punctRun,
  () => "'" + cased(pick(contractions)), () => ' ' + punctRun(), () => word() + "'" + cased(pick(contractions))])()

// Beyond ASCII: letters (upper, lower, title case, modifier, other),
// marks, digits and numbers of other scripts, white space that is not
// ASCII, emoji; now and then the three characters tiktoken decides.
const unicode = [
  () => pick(chars('àéîõüçñßøåæœÀÉÎÕÜÇÑØÅÆŒłŁąęőűčřůğış')),
  () => range(0x300, 0x36f), // combining marks
  () => pick(chars('ǅǈǋǲ')), // title case
  () => pick(chars('ʰʲˀˆ々ー')), // modifier letters
  () => range(0x4e00, 0x9fa5), () => range(0x3041, 0x3096), () => range(0xac00, 0xd7a3),
  () => range(0x621, 0x64a), () => range(0x905, 0x939), () => range(0x93e, 0x94d),
  () => range(0x660, 0x669), () => range(0x966, 0x96f), () => range(0xff10, 0xff19),
  () => pick(chars('²³¹¼½¾ⅠⅡⅫ①②')),
  () => pick(['\u00a0', '\u1680', '\u2000', '\u2003', '\u200a', '\u2028', '\u2029', '\u202f', '\u205f', '\u3000']),
  () => pick(['😀', '👍🏽', '👩‍💻', '🇫🇷', '1️⃣', '❤️']),
  () => pick(['…', '—', '“', '”', '«', '»', '¿', '·', '•', '€', '√']),
  () => (rnd() < 0.1 ? pick(['\ufeff', '\u0085', '\u017f']) : 'é'),
]

const families = {
  // Characters at the edges, one after the other.
  edges: () => repeat(1 + below(48), () => pick(edge)),
  // Token-like chunks: words of each case, contractions, numbers, runs.
  chunks: () => repeat(1 + below(16), asciiChunk),
  // Code and prose lines.
  code: () => repeat(1 + below(6), () => pick([
    () => `${' '.repeat(below(9))}${word()}(${word()}, ${digits()});`,
    () => `if (${word()} != ${word()}) { return -${digits()}; }`,
    () => `// ${word()} ${word()}'${pick(contractions)} ${word()}`,
    () => `"${word()}": [${digits()}, "${word()} ${word()}"],`,
    () => `${word()}/${word()}/${word()}.${pick(['c', 'h', 'js', 'py'])}:${digits()}`,
    () => `${word()[0].toUpperCase()}${word()} ${word()}'${cased(pick(contractions))} ${word()}.`,
  ])() + pick(['\n', '\r\n', '\n\n', '', ' \n', '\t\n'])),
  // ASCII chunks with characters of other scripts among them.
  unicode: () => repeat(1 + below(12), () => (rnd() < 0.4 ? repeat(1 + below(3), pick(unicode)) : asciiChunk())),
  // Long runs and long single pieces, rarely.
  long: () => pick([
    () => pick(['a', 'Z', ' ', '\n', '7', '!', '/', "'", '\t', 'é', '日']).repeat(200 + below(1800)),
    () => repeat(300 + below(1500), () => pick(chars('abcdefghijklmnopqrstuvwxyz'))),
    () => repeat(100 + below(400), () => pick(chars(' \t\n\r'))) + pick(['', 'x', '.', '0']),
    () => repeat(200 + below(800), () => pick(chars('0123456789'))),
  ])(),
}
const weights = [['edges', 30], ['chunks', 30], ['code', 12], ['unicode', 27.5], ['long', 0.5]]
const total = weights.reduce((s, [, w]) => s + w, 0)
const family = () => {
  let r = rnd() * total
  for (const [name, w] of weights) if ((r -= w) < 0) return name
  return weights[0][0]
}

// ---- Enumerated families ----
function* enumerated() {
  const all = (alphabet, n, prefix = '') => {
    if (n === 0) return [prefix]
    return alphabet.flatMap((c) => all(alphabet, n - 1, prefix + c))
  }
  const ascii = Array.from({ length: 128 }, (_, i) => String.fromCharCode(i))
  yield ['every ASCII text of 1 and 2 characters', [...ascii, ...all(ascii, 2)]]
  const meet = chars("aAsStTlLrRvVeEdDmM'0 \t\n\r\v\f./!")
  yield ['every 3-character text at the edges', all(meet, 3)]
  const neighbours = ['', 'a', 'A', 'z', ' ', '  ', '0', '.', "'", '\n', '\r\n', 'é', 'É', '日', '\u3000', '/', 's']
  const caseVariants = (w) => Array.from({ length: 1 << w.length }, (_, m) =>
    repeat(w.length, (_, i) => (m >> i & 1 ? w[i].toUpperCase() : w[i])))
  const contractionTexts = []
  for (const c of contractions)
    for (const v of caseVariants(c))
      for (const before of neighbours)
        for (const after of neighbours) contractionTexts.push(`${before}'${v}${after}`, `${before}''${v}${after}`, `${before}’${v}${after}`)
  yield ['every contraction in every case between neighbours', contractionTexts]
  const spaces = [' ', '\t', '\n', '\r', '\v', '\f']
  const runs = [1, 2, 3, 4].flatMap((n) => all(spaces, n))
  const after = ['', 'a', 'A', '0', '.', "'s", '/', 'é', '\u3000', '\u00a0x']
  yield ['every ASCII white space run up to 4 before each kind', runs.flatMap((r) => after.flatMap((a) => [r + a, 'x' + r + a]))]
  const marks = chars('./-!\r\n a')
  yield ['punctuation, line breaks and slashes up to 5', [1, 2, 3, 4, 5].flatMap((n) => all(marks, n)).map((t) => t + 'z')]
  yield ['case changes up to 7', [1, 2, 3, 4, 5, 6, 7].flatMap((n) => all(chars("aA'"), n))]
  const digitTexts = []
  for (let n = 1; n <= 16; n++)
    for (const before of ['', ' ', 'a', 'a ', '.', '-', 'é', '²'])
      for (const sep of ['', ' ', '.', ',', 'x', '\n', '٣', '²', 'é'])
        digitTexts.push(before + '1234567890123456'.slice(0, n) + sep + '98')
  yield ['digit runs of every length between neighbours', digitTexts]
}

// ---- Comparison ----
let compared = 0
let tokens = 0
let mismatches = 0
let byTiktoken = 0
let shown = 0
const kinds = {}
const show = (what, t, detail) => {
  if (shown++ < 10) console.error(`${what}: ${JSON.stringify(t.length > 200 ? t.slice(0, 200) + '…' : t)} ${detail}`)
}

function compare(texts) {
  const ours = compactdCounts(countTexts, ranksDir, texts)
  texts.forEach((t, i) => {
    const [o200k, cl100k] = ours[i]
    for (const [enc, mine] of [['o200k_base', o200k], ['cl100k_base', cl100k]]) {
      let want
      if (explained(t)) {
        want = tiktoken[enc].encode_ordinary(t).length
        byTiktoken++
      } else {
        want = gpt[enc](t, ordinary)
      }
      tokens += want
      if (want !== mine) {
        mismatches++
        show(`${enc}: compactd differs`, t, `compactd ${mine}, reference ${want}`)
      }
    }
  })
  compared += texts.length
}

for (let i = 0; i < SKIP; i++) families[family()]()
for (let done = 0; done < TOTAL; done += BATCH) {
  const texts = []
  for (let i = 0; i < Math.min(BATCH, TOTAL - done); i++) {
    const k = family()
    kinds[k] = (kinds[k] || 0) + 1
    texts.push(families[k]())
  }
  compare(texts)
}
const generated = compared
for (const [name, texts] of SKIP ? [] : enumerated()) {
  kinds[name] = texts.length
  for (let i = 0; i < texts.length; i += BATCH) compare(texts.slice(i, i + BATCH))
}
tiktoken.o200k_base.free()
tiktoken.cl100k_base.free()
console.log(`texts: ${Object.entries(kinds).map(([k, n]) => `${k} ${n}`).join(', ')}`)
console.log(`compared ${compared} texts (${generated} generated after ${SKIP} skipped, ${compared - generated} enumerated) x 2 encodings (${tokens} tokens) with gpt-tokenizer 4.0.0: ${mismatches} mismatches (${byTiktoken} counts of texts holding U+FEFF, U+0085 or U+017F compared with tiktoken 1.0.22 instead)`)
const failed = mismatches || compared < TOTAL ? 1 : 0
console.log(`tokenizer_differential: ${1 - failed} passed, ${failed} failed`)
process.exit(failed)
