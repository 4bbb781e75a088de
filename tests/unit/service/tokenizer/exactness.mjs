// compactd's o200k_base and cl100k_base counts against OpenAI's tiktoken
// 1.0.22 (its Rust code built to WASM) and the JavaScript ports
// gpt-tokenizer 4.0.0 and js-tiktoken 1.0.21, on more than 20,000 texts: a
// fixed-seed generator across scripts and the cases pre-tokenizers get
// wrong, plus the repository's own files. Any unexplained difference fails.
//   node exactness.mjs <count_texts binary> <ranks folder> <source root> [deep]
// js-tiktoken's merging takes time quadratic in a piece's length (seconds
// for each of the long runs and pieces below, a third of the whole for the
// generated runs): on those it is asked only in the deep pass (deep);
// compactd is held to tiktoken and gpt-tokenizer on them in every run.
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { countTokens as gptO200k } from 'gpt-tokenizer/encoding/o200k_base'
import { countTokens as gptCl100k } from 'gpt-tokenizer/encoding/cl100k_base'
import { getEncoding } from 'js-tiktoken'
import { generator } from '../../../xorshift.mjs'
import { compactdCounts } from './count_texts.mjs'
import { get_encoding } from 'tiktoken'

const [countTexts, ranksDir, root, pass] = process.argv.slice(2)
const deep = pass === 'deep'
if (pass !== undefined && pass !== 'deep' && pass !== 'default') {
  console.error(`exactness.mjs: the pass is deep or default, not ${pass}`)
  process.exit(2)
}
const ordinary = { disallowedSpecial: new Set() } // special-token text is text
const jsO200k = getEncoding('o200k_base')
const jsCl100k = getEncoding('cl100k_base')
const tkO200k = get_encoding('o200k_base')
const tkCl100k = get_encoding('cl100k_base')

// ---- A seeded generator (xorshift32), the same corpus on every run ----
const { rnd, below, pick } = generator(0x2545f491)
const range = (lo, hi) => String.fromCodePoint(lo + below(hi - lo + 1))
const repeat = (n, f) => Array.from({ length: n }, f).join('')

// Blocks assigned long before Unicode 14, which PCRE2 10.42 knows: code
// points added later are letters to node's ICU and unassigned to PCRE2.
const latin = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'
const diacritics = 'àáâãäåæçèéêëìíîïðñòóôõöøùúûüýþÿÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÐÑÒÓÔÕÖØÙÚÛÜÝÞßœŒšŠžŽłŁąęőűčřůğışİ'
const combining = () => range(0x300, 0x36f)
const spaces = ['\t', '\n', '\v', '\f', '\r', ' ', '\u0085', '\u00a0', '\u1680', '\u2000', '\u2001',
  '\u2002', '\u2003', '\u2004', '\u2005', '\u2006', '\u2007', '\u2008', '\u2009', '\u200a',
  '\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff', '\u180e', '\u200b', '\r\n']
const digits = ['0123456789', '٠١٢٣٤٥٦٧٨٩', '०१२३४५६७८९', '０１２３４５６７８９', '²³¹¼½¾', 'ⅠⅡⅢⅣⅫ', '①②③']
const punct = '.,;:!?"\'()[]{}<>-_=+*/\\|@#$%^&~`…—–«»“”‘’¿¡·•'
const emoji = ['😀', '👍', '👍🏻', '👍🏿', '👩‍💻', '👨🏽‍🚀', '👨‍👩‍👧‍👦', '🏳️‍🌈', '🇫🇷', '🇯🇵', '1️⃣', '❤️', '🧑🏾‍🤝‍🧑🏼', '🤷‍♀️', '✍🏽', '🫡']
const specials = ['<|endoftext|>', '<|fim_prefix|>', '<|fim_middle|>', '<|fim_suffix|>', '<|endofprompt|>', '<|im_start|>', '<|im_end|>', '<|endoftext|']
const contractions = ["'s", "'S", "'t", "'T", "'re", "'RE", "'rE", "'ve", "'VE", "'m", "'M", "'ll", "'LL", "'Ll", "'d", "'D", "'x", "’s", "'ſ", "'K"]

const word = () => repeat(1 + below(10), () => (rnd() < 0.2 ? pick(diacritics) : pick(latin)))
const scripts = {
  latin: () => repeat(1 + below(30), () => word() + (rnd() < 0.15 ? pick(punct) : '') + pick([' ', ' ', ' ', '\n', '  '])),
  decomposed: () => repeat(1 + below(20), () => pick(latin) + (rnd() < 0.5 ? combining() : '') + (rnd() < 0.1 ? combining() + combining() : '') + (rnd() < 0.2 ? ' ' : '')),
  cjk: () => repeat(1 + below(60), () => pick([() => range(0x4e00, 0x9fa5), () => range(0x3041, 0x3096), () => range(0x30a1, 0x30fa), () => pick('、。「」・ー！？'), () => ' '])()),
  arabic: () => repeat(1 + below(40), () => pick([() => range(0x621, 0x64a), () => range(0x64b, 0x652), () => range(0x660, 0x669), () => ' ', () => '،'])()),
  devanagari: () => repeat(1 + below(40), () => pick([() => range(0x905, 0x939), () => range(0x93e, 0x94d), () => range(0x966, 0x96f), () => ' ', () => '।'])()),
  hangul: () => repeat(1 + below(40), () => pick([() => range(0xac00, 0xd7a3), () => range(0x1100, 0x1112), () => range(0x1161, 0x1175), () => ' ', () => '.'])()),
  emoji: () => repeat(1 + below(20), () => pick(emoji) + (rnd() < 0.3 ? pick([' ', '', '\n', word()]) : '')),
  marks: () => repeat(1 + below(20), () => pick([combining, () => ' ', () => pick(latin), () => pick(digits[0]), () => '\n', () => range(0x93e, 0x94d), () => range(0x64b, 0x652)])()),
  whitespace: () => repeat(1 + below(30), () => (rnd() < 0.6 ? pick(spaces) : rnd() < 0.5 ? word() : pick(punct))),
  digits: () => repeat(1 + below(10), () => repeat(1 + below(40), () => pick(pick(digits))) + pick(['', ' ', ',', '.', 'x', '\n', '-'])),
  contractions: () => repeat(1 + below(15), () => (rnd() < 0.5 ? word().toUpperCase() : word()) + pick(contractions) + pick([' ', '', '\n', '.'])),
  code: () => {
    const id = () => word().replace(/[^a-zA-Z]/g, 'x') + (rnd() < 0.3 ? '_' + below(100) : '')
    const lines = [
      () => `int ${id()}(const char *${id()}, size_t n) {`,
      () => `    if (${id()} == NULL || n > ${below(4096)}) return -1;`,
      () => `\tfor (size_t i = 0; i < n; i++) ${id()}[i] ^= 0x${below(255).toString(16)};`,
      () => `def ${id()}(self, ${id()}=None):`,
      () => `        return {k: v for k, v in ${id()}.items() if v}  # ${word()}`,
      () => `const ${id()} = await fetch(\`/v1/\${${id()}}\`, { method: 'POST' });`,
      () => `}`, () => ``, () => `#include <${id()}.h>`, () => `  // TODO(${id()}): ${word()} ${word()}'s`,
      () => `SELECT ${id()}, COUNT(*) FROM ${id()} WHERE x >= ${below(99999)};`,
    ]
    return repeat(1 + below(12), () => pick(lines)() + pick(['\n', '\r\n', '\n\n', '\n    ']))
  },
  json: () => {
    const value = (d) => pick([() => below(1e6), () => -rnd() * 1e3, () => word(), () => null, () => true,
      () => (d < 3 ? Array.from({ length: below(4) }, () => value(d + 1)) : 1),
      () => (d < 3 ? Object.fromEntries(Array.from({ length: below(4) }, () => [word(), value(d + 1)])) : 'x')])()
    return JSON.stringify(value(0), null, pick([undefined, 2, 4, '\t']))
  },
  runs: () => {
    // js-tiktoken's merge is quadratic (seconds for a few thousand bytes in
    // one piece), so runs stay short here; a few long ones follow below.
    const n = pick([5, 20, 50, 100, 200]) + below(30)
    return pick(['', word(), ' ']) + pick(['a', ' ', '\n', '7', '!', 'é', '日', '\t', '=', '-', 'ab', '🙂', combining(), '\u3000', 'Z', 'ß']).repeat(n) + pick(['', 'x', ' ', '\n'])
  },
  special: () => repeat(1 + below(6), () => pick([() => pick(specials), () => word(), () => ' ', () => '\n', () => pick(specials) + pick(specials)])()),
  mixed: () => repeat(1 + below(30), () => Array.from(pick(Object.keys(scripts).filter((k) => k !== 'mixed' && k !== 'runs').map((k) => scripts[k]))()).slice(0, 20).join('')),
}

// ---- The corpus ----
const texts = []
const kinds = {}
const kindOf = []
const add = (kind, t) => {
  texts.push(t)
  kindOf.push(kind)
  kinds[kind] = (kinds[kind] || 0) + 1
}
const slowForJs = new Set(['runs', 'long runs', 'long pieces'])
const names = Object.keys(scripts)
for (let i = 0; i < 22000; i++) {
  const k = names[i % names.length]
  add(k, scripts[k]())
}
for (const c of ['a', ' ', '\n', '7', '!', 'ab', 'é', '\u0301', 'Z'])
  add('long runs', c.repeat(2500) + 'x')
// Single pieces of varied letters past 2 KiB, which compactd merges through
// its rank buckets rather than the heap.
add('long pieces', repeat(3000, () => pick(latin.slice(0, 26))))
add('long pieces', repeat(2600, () => (rnd() < 0.2 ? pick(diacritics.slice(0, 30)) : pick(latin.slice(0, 26)))))
add('long pieces', repeat(1200, () => range(0x4e00, 0x9fa5)))
add('long pieces', repeat(1200, () => range(0xac00, 0xd7a3)))
// Every tracked text file whole, and cut into slices at code-point boundaries.
const files = execFileSync('git', ['-C', root, 'ls-files'], { encoding: 'utf8' }).split('\n').filter((f) => /\.(c|h|md|py|sh|mjs|yaml|json|txt|lua|cmake)$|CMakeLists|Dockerfile|run$|test$/.test(f))
for (const f of files) {
  let s
  try {
    s = readFileSync(join(root, f), 'utf8')
  } catch {
    continue
  }
  if (s.includes('\ufffd')) continue
  add('repo files', s)
  const cps = Array.from(s)
  for (let k = 0; k < 4 && cps.length > 10; k++) {
    const a = below(cps.length)
    add('repo slices', cps.slice(a, a + 1 + below(2000)).join(''))
  }
}

// ---- compactd's counts ----
const ours = compactdCounts(countTexts, ranksDir, texts)

// ---- Comparison ----
// compactd must equal tiktoken on every text, and gpt-tokenizer and
// js-tiktoken on every text where they equal tiktoken. Where a JavaScript
// port differs from tiktoken the text must hold U+FEFF or U+0085: ECMAScript's
// \s has U+FEFF and lacks U+0085, Unicode's White_Space (tiktoken's \s) the
// reverse; and gpt-tokenizer looks tokens up by text decoded with
// TextDecoder, which drops a leading U+FEFF, so it never finds the tokens
// that begin with one.
const explained = (t) => /[\ufeff\u0085\u017f]/.test(t)
let mismatches = 0
const portDiffers = { 'gpt-tokenizer': 0, 'js-tiktoken': 0 }
let tokens = 0
let shown = 0
const show = (what, t, detail) => {
  if (shown++ < 10) console.error(`${what}: ${JSON.stringify(t.length > 300 ? t.slice(0, 300) + '…' : t)} ${detail}`)
}
texts.forEach((t, i) => {
  const withJs = deep || !slowForJs.has(kindOf[i])
  const ports = (gpt, js) => (withJs ? { 'gpt-tokenizer': gpt(), 'js-tiktoken': js() } : { 'gpt-tokenizer': gpt() })
  const refs = [
    ['o200k_base', ours[i][0], tkO200k.encode_ordinary(t).length, ports(() => gptO200k(t, ordinary), () => jsO200k.encode(t, [], []).length)],
    ['cl100k_base', ours[i][1], tkCl100k.encode_ordinary(t).length, ports(() => gptCl100k(t, ordinary), () => jsCl100k.encode(t, [], []).length)],
  ]
  for (const [enc, mine, tk, ports] of refs) {
    tokens += tk
    const detail = `compactd ${mine}, tiktoken ${tk}, ${Object.entries(ports).map(([k, v]) => `${k} ${v}`).join(', ')}`
    if (mine !== tk) {
      mismatches++
      show(`${enc}: compactd differs from tiktoken`, t, detail)
    }
    for (const [port, n] of Object.entries(ports)) {
      if (n === tk) continue
      if (explained(t)) {
        portDiffers[port]++
      } else {
        mismatches++
        show(`${enc}: ${port} differs from tiktoken on a text without U+FEFF, U+0085 or U+017F`, t, detail)
      }
    }
  }
})
tkO200k.free()
tkCl100k.free()
console.log(`corpus: ${Object.entries(kinds).map(([k, n]) => `${k} ${n}`).join(', ')}`)
console.log(`compared ${texts.length} texts x 2 encodings (${tokens} tokens) with tiktoken 1.0.22, gpt-tokenizer 4.0.0 and js-tiktoken 1.0.21 (${deep ? 'all' : 'but the runs and the long pieces'}): ${mismatches} mismatches`)
console.log(`  where a JavaScript port differs from tiktoken (texts with U+FEFF, U+0085 or U+017F; compactd follows tiktoken): gpt-tokenizer ${portDiffers['gpt-tokenizer']} counts, js-tiktoken ${portDiffers['js-tiktoken']}`)
const failed = mismatches ? 1 : 0
console.log(`tokenizer_exactness: ${1 - failed} passed, ${failed} failed`)
process.exit(failed)
