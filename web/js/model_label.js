// How a model is named wherever one is picked: its name, the provider serving it and the
// price in force per million tokens (input / output), from GET /api/models `details`.

const SYMBOLS = { USD: '$', EUR: '€', GBP: '£', JPY: '¥' };

/** "$3" for 3 USD, "3 CHF" where no symbol is known (amounts are exact decimal strings). */
export function money(amount, currency) {
  const sym = SYMBOLS[currency];
  return sym ? `${sym}${amount}` : `${amount} ${currency}`;
}

/** "$3 / $15 per 1M" for a price `{currency, input, output}`; "unpriced" for none. */
export function priceText(price) {
  if (!price) return 'unpriced';
  return `${money(price.input, price.currency)} / ${money(price.output, price.currency)} per 1M`;
}

/** "gpt-x · openai-main · $3 / $15 per 1M" for `name`, or the bare name without details. */
export function modelLabel(name, models) {
  const d = (models?.details || []).find((m) => m.name === name);
  if (!d) return name;
  return `${name} · ${d.provider} · ${priceText(d.price)}`;
}
