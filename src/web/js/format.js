// How figures, times and long text are written on the page: 12,345, an
// event's local time, a value cut to its first line or to a length.
//
// Pure functions of their arguments. Never: touch the page or the state.

/** Local time of an RFC 3339 timestamp: the time today, else the date too. */
export function formatTime(iso) {
  if (!iso) return '';
  const date = new Date(iso);
  if (isNaN(date)) return String(iso);
  const sameDay = date.toDateString() === new Date().toDateString();
  return sameDay
    ? date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
    : date.toLocaleDateString([], { year: 'numeric', month: 'short', day: 'numeric' }) +
        ' ' + date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
}

/** Date and time of an event for a tooltip ('' when there is none). */
export function fullTime(iso) {
  const date = iso ? new Date(iso) : null;
  return date && !isNaN(date) ? date.toLocaleString() : '';
}

/** One formatter for every figure (toLocaleString with options makes one per call: slow on long sessions). */
const THOUSANDS = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

/** 12345 as `12,345`. */
export function thousands(n) {
  return THOUSANDS.format(Number(n));
}

export function firstLine(s) {
  const at = s.indexOf('\n');
  return at < 0 ? s : s.slice(0, at) + '\u2026';
}

export function cut(s, max) {
  const chars = Array.from(s);
  return chars.length > max ? chars.slice(0, max).join('') + '\u2026' : s;
}
