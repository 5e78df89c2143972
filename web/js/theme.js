// The colour theme: `system` follows the device (prefers-color-scheme), `light` and `dark`
// are fixed. The account's choice is stored on the server (it follows the user to another
// browser) and mirrored in localStorage so theme_boot.js can apply it before first paint.

const KEY = 'agentchat.theme';
export const THEMES = [
  { value: 'system', label: 'System' },
  { value: 'light', label: 'Light' },
  { value: 'dark', label: 'Dark' },
];

/** Applies `theme` to the page and remembers it for the next page load. */
export function applyTheme(theme) {
  const t = theme === 'light' || theme === 'dark' ? theme : 'system';
  if (t === 'system') document.documentElement.removeAttribute('data-theme');
  else document.documentElement.setAttribute('data-theme', t);
  try {
    if (t === 'system') localStorage.removeItem(KEY);
    else localStorage.setItem(KEY, t);
  } catch { /* storage blocked: applied for this page only */ }
  return t;
}
