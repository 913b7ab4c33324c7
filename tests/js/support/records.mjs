// What `inboxInputGuard.counts()` must say of `violations()`: every repair and
// every quarantine counts; an observation counts only the first sighting of its
// value (records of one value share its `valueId`).

/** The counts the records add up to, in record order. */
export function tallyOf(violations) {
  const tally = { repaired: 0, quarantined: 0, observed: 0 };
  const seen = new Set();
  for (const v of violations) {
    if (v.action !== 'observed') tally[v.action] = (tally[v.action] ?? 0) + 1;
    else if (!seen.has(v.valueId)) tally.observed += 1;
    seen.add(v.valueId);
  }
  return tally;
}
