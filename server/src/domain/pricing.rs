//! Money for model calls: a price per million tokens of each kind, and the exact cost of a
//! call's usage. Decimal all the way (never a float), rounded to the 9 places Postgres keeps.

use rust_decimal::Decimal;

/// Decimal places a cost keeps (`NUMERIC(20,9)`).
pub const COST_SCALE: u32 = 9;

/// The largest amount a cost column holds (`NUMERIC(20,9)`: 11 digits before the point):
/// a cost is never more, so no usage, however absurd, can fail the row that records it.
pub fn max_cost() -> Decimal {
    Decimal::from_i128_with_scale(99_999_999_999_999_999_999, COST_SCALE)
}

/// A model's price in force: amounts per million tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Price {
    pub currency: String,
    pub input: Decimal,
    pub output: Decimal,
    pub cache_read: Decimal,
    pub cache_write: Decimal,
}

/// Tokens of one call by how they are charged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TokenCounts {
    /// Input read fresh (not from the provider's prompt cache).
    pub input: u64,
    /// Input served from the prompt cache.
    pub cache_read: u64,
    /// Input written to the prompt cache.
    pub cache_write: u64,
    pub output: u64,
}

impl TokenCounts {
    /// Every token, however charged (what a token budget counts).
    pub fn total(&self) -> u64 {
        self.input
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_write)
            .saturating_add(self.output)
    }
}

impl Price {
    /// What `tokens` cost at this price, rounded half away from zero to 9 places, and at
    /// most [`max_cost`] (saturating, never overflowing).
    pub fn cost(&self, tokens: &TokenCounts) -> Decimal {
        let per_million = Decimal::from(1_000_000u32);
        let part = |n: u64, price: Decimal| {
            Decimal::from(n)
                .checked_mul(price)
                .and_then(|p| p.checked_div(per_million))
        };
        let sum = [
            (tokens.input, self.input),
            (tokens.cache_read, self.cache_read),
            (tokens.cache_write, self.cache_write),
            (tokens.output, self.output),
        ]
        .into_iter()
        .try_fold(Decimal::ZERO, |sum, (n, price)| {
            part(n, price).and_then(|p| sum.checked_add(p))
        });
        match sum {
            Some(sum) => sum
                .round_dp_with_strategy(
                    COST_SCALE,
                    rust_decimal::RoundingStrategy::MidpointAwayFromZero,
                )
                .min(max_cost()),
            None => max_cost(),
        }
    }
}

impl Price {
    /// The most `input` tokens in and `output` out can cost, whatever the provider's cache
    /// does with the input (each input token at the dearest of input, cache read and cache
    /// write), rounded up: what a money budget reserves.
    pub fn worst_case(&self, input: u64, output: u64) -> Decimal {
        let per_million = Decimal::from(1_000_000u32);
        let input_price = self.input.max(self.cache_read).max(self.cache_write);
        let sum = Decimal::from(input) * input_price + Decimal::from(output) * self.output;
        (sum / per_million)
            .round_dp_with_strategy(COST_SCALE, rust_decimal::RoundingStrategy::AwayFromZero)
    }

    /// How many output tokens `amount` pays for after the worst case of `input` tokens in
    /// (`i64::MAX` when output is free).
    pub fn output_affordable(&self, amount: Decimal, input: u64) -> i64 {
        let left = amount - self.worst_case(input, 0);
        if left <= Decimal::ZERO {
            return 0;
        }
        if self.output <= Decimal::ZERO {
            return i64::MAX;
        }
        let per_token = self.output / Decimal::from(1_000_000u32);
        // A price too small to divide by (prices are bounded to 9 places; this is the
        // backstop) pays for as much output as anyone may ask.
        match left.checked_div(per_token) {
            Some(tokens) if !per_token.is_zero() => {
                i64::try_from(tokens.floor()).unwrap_or(i64::MAX)
            }
            _ => i64::MAX,
        }
    }
}

/// Decimals on the wire: exact strings without Postgres's trailing zeros (`"0.02"`, not
/// `"0.020000000"`).
pub mod decimal_text {
    use rust_decimal::Decimal;
    use serde::Serializer;

    pub fn serialize<S: Serializer>(d: &Decimal, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&d.normalize())
    }

    pub fn option<S: Serializer>(d: &Option<Decimal>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.collect_str(&d.normalize()),
            None => s.serialize_none(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn dec(s: &str) -> Decimal {
        Decimal::from_str(s).unwrap_or_default()
    }

    #[test]
    fn each_kind_is_charged_at_its_price_exactly() {
        let price = Price {
            currency: "USD".into(),
            input: dec("3"),
            output: dec("15"),
            cache_read: dec("0.30"),
            cache_write: dec("3.75"),
        };
        let tokens = TokenCounts {
            input: 1_000,
            cache_read: 2_400,
            cache_write: 100,
            output: 500,
        };
        // 3000 + 720 + 375 + 7500 micro-dollars
        assert_eq!(price.cost(&tokens), dec("0.011595"));
        assert_eq!(tokens.total(), 4_000);
        let one = TokenCounts {
            input: 1,
            ..Default::default()
        };
        let cheap = Price {
            input: dec("0.1"),
            ..price
        };
        assert_eq!(cheap.cost(&one), dec("0.0000001"));
        // Three calls of 0.1 add up to exactly 0.3 (a float would not).
        assert_eq!(cheap.cost(&one) * Decimal::from(3), dec("0.0000003"));
    }

    #[test]
    fn a_cost_saturates_at_what_its_column_holds() {
        let price = Price {
            currency: "USD".into(),
            input: dec("3"),
            output: dec("15"),
            cache_read: dec("0.30"),
            cache_write: dec("3.75"),
        };
        let absurd = TokenCounts {
            input: 1_000_000_000_000_000_000,
            ..Default::default()
        };
        assert_eq!(price.cost(&absurd), max_cost());
        let dear = Price {
            output: Decimal::MAX,
            ..price.clone()
        };
        let all = TokenCounts {
            output: u64::MAX,
            ..absurd
        };
        assert_eq!(dear.cost(&all), max_cost());
        assert_eq!(max_cost().to_string(), "99999999999.999999999");
    }

    #[test]
    fn the_worst_case_covers_any_cache_split_and_the_room_fits_it() {
        let price = Price {
            currency: "USD".into(),
            input: dec("3"),
            output: dec("15"),
            cache_read: dec("0.30"),
            cache_write: dec("3.75"),
        };
        // 1000 in at the cache-write price (the dearest) + 200 out.
        assert_eq!(price.worst_case(1_000, 200), dec("0.00675"));
        for split in [(1_000, 0, 0), (0, 1_000, 0), (0, 0, 1_000), (300, 300, 400)] {
            let tokens = TokenCounts {
                input: split.0,
                cache_read: split.1,
                cache_write: split.2,
                output: 200,
            };
            assert!(price.cost(&tokens) <= price.worst_case(1_000, 200));
        }
        let room = price.output_affordable(dec("0.00675"), 1_000);
        assert_eq!(room, 200);
        assert!(price.worst_case(1_000, u64::try_from(room).unwrap_or(0)) <= dec("0.00675"));
        assert_eq!(price.output_affordable(dec("0.001"), 1_000), 0);
        let free_output = Price {
            output: Decimal::ZERO,
            ..price
        };
        assert_eq!(free_output.output_affordable(dec("1"), 10), i64::MAX);
    }
}
