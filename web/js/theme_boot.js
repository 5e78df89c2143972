// Applies the account's theme before the first paint (a classic script in <head>, so it
// runs before the page is drawn; the CSP allows no inline script). theme.js keeps the
// stored copy in step with the server's preference.
(function () {
  try {
    var t = localStorage.getItem('agentchat.theme');
    if (t === 'light' || t === 'dark') document.documentElement.setAttribute('data-theme', t);
  } catch (e) { /* storage blocked: the device's theme */ }
}());
