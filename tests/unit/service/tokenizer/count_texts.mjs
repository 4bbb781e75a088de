// compactd's o200k_base and cl100k_base counts of texts, from the
// count_texts binary (count_texts.c): an array of [o200k_base, cl100k_base],
// one for each text. Exits the process when the binary fails.
import { spawnSync } from 'node:child_process'

export function compactdCounts(countTexts, ranksDir, texts) {
  const records = []
  for (const t of texts) {
    const b = Buffer.from(t, 'utf8')
    const h = Buffer.alloc(4)
    h.writeUInt32LE(b.length)
    records.push(h, b)
  }
  const run = spawnSync(countTexts, [ranksDir], { input: Buffer.concat(records), maxBuffer: 1 << 28 })
  if (run.status !== 0) {
    console.error(`count_texts exited ${run.status}: ${run.stderr}`)
    process.exit(1)
  }
  const counts = run.stdout.toString().trim().split('\n').map((l) => l.split(' ').map(Number))
  if (counts.length !== texts.length) {
    console.error(`count_texts answered ${counts.length} of ${texts.length} texts`)
    process.exit(1)
  }
  return counts
}
