// Reads a JSON array of texts on stdin and writes their counts under one
// encoding by gpt-tokenizer 4.0.0 (special-token text as ordinary text), as
// a JSON array: the integration tests' reference.
//   node count_reference.mjs <o200k_base|cl100k_base> < texts.json
import { readFileSync } from 'node:fs'

const encoding = process.argv[2]
if (encoding !== 'o200k_base' && encoding !== 'cl100k_base') {
  console.error('usage: node count_reference.mjs <o200k_base|cl100k_base> < texts.json')
  process.exit(2)
}
const { countTokens } = await import(`gpt-tokenizer/encoding/${encoding}`)
const texts = JSON.parse(readFileSync(0, 'utf8'))
console.log(JSON.stringify(texts.map((t) => countTokens(t, { disallowedSpecial: new Set() }))))
