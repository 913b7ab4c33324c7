// Number formatting shared by the table (bench.mjs) and the chart (chart.mjs).

/** `n` rounded, with thousands separators; `+ 0`: a negative value that rounds to zero is printed 0, not -0. */
export const int = (n) => (Math.round(n) + 0).toLocaleString('en-US')

/** `n.toFixed(digits)`, a negative value that rounds to zero printed as zero too. */
export const fixed = (n, digits) => {
  const text = n.toFixed(digits)
  return Number(text) === 0 ? (0).toFixed(digits) : text
}
