// A small deterministic generator (xorshift32) for the JavaScript tests and
// benchmarks, as tests/xorshift.h is for the C ones: the same seed gives the
// same inputs on every machine.
export function generator(seed) {
  let x = seed >>> 0 || 1
  const rnd = () => {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    return (x >>> 0) / 4294967296
  }
  const below = (n) => Math.floor(rnd() * n)
  const pick = (a) => a[below(a.length)]
  return { rnd, below, pick }
}
