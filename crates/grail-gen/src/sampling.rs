//! Choosing the next token from logits: greedy, or temperature with top-k and top-p,
//! seeded. Masked tokens never take part.

use grail_vocab::TokenBitmask;
use rand::{Rng, SeedableRng, rngs::SmallRng};

/// How the next token is chosen.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingParams {
    /// 0 (the default) is greedy: the most likely allowed token. Above 0, logits are
    /// divided by it and a token is drawn.
    pub temperature: f32,
    /// Draw among the `top_k` most likely allowed tokens only (0: no limit).
    pub top_k: usize,
    /// Draw among the most likely allowed tokens whose probabilities add up to `top_p`
    /// (1.0: no limit).
    pub top_p: f32,
    /// The random seed of the draws.
    pub seed: u64,
    /// Divides the (positive) logits of tokens written in the last
    /// [`SamplingParams::repeat_last_n`] output tokens, multiplies negative ones, as
    /// llama.cpp's repeat penalty does; 1.0 is off. Small models fall into loops inside
    /// free strings (`"path_to_path_to_…"`) that a grammar cannot forbid; a mild penalty
    /// (1.1–1.3) breaks them. Tokens a grammar forces are unaffected: the penalty only
    /// reorders the allowed ones.
    pub repeat_penalty: f32,
    /// How many of the last output tokens the repeat penalty looks at.
    pub repeat_last_n: usize,
}

impl Default for SamplingParams {
    fn default() -> SamplingParams {
        SamplingParams {
            temperature: 0.0,
            top_k: 0,
            top_p: 1.0,
            seed: 0,
            repeat_penalty: 1.0,
            repeat_last_n: 64,
        }
    }
}

impl SamplingParams {
    /// True for greedy decoding.
    pub fn is_greedy(&self) -> bool {
        self.temperature <= 0.0
    }

    /// True when neither top-k nor top-p cuts the candidates. Then drawing from all
    /// tokens and redrawing from the allowed ones when the draw is refused gives exactly
    /// the distribution over the allowed tokens (see [`crate::decode`]).
    pub fn draws_from_everything(&self) -> bool {
        self.top_k == 0 && self.top_p >= 1.0
    }

    /// A usage error in the parameters, if any.
    pub fn validate(&self) -> Result<(), String> {
        if !self.temperature.is_finite() || self.temperature < 0.0 {
            return Err(format!(
                "temperature must be 0 (greedy) or more, not {}",
                self.temperature
            ));
        }
        if !self.repeat_penalty.is_finite() || self.repeat_penalty <= 0.0 {
            return Err(format!(
                "the repeat penalty must be above 0 (1 is off), not {}",
                self.repeat_penalty
            ));
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return Err(format!("top-p must be in (0, 1], not {}", self.top_p));
        }
        Ok(())
    }
}

/// Draws tokens as [`SamplingParams`] say, with its own seeded random source.
#[derive(Debug, Clone)]
pub struct TokenSampler {
    params: SamplingParams,
    rng: SmallRng,
    candidates: Vec<(u32, f32)>,
}

impl TokenSampler {
    /// A sampler seeded from `params.seed`.
    pub fn new(params: SamplingParams) -> TokenSampler {
        let rng = SmallRng::seed_from_u64(params.seed);
        TokenSampler {
            params,
            rng,
            candidates: Vec::new(),
        }
    }

    /// The parameters.
    pub fn params(&self) -> &SamplingParams {
        &self.params
    }

    /// The chosen token among those `allowed` (every token when `None`); `None` when no
    /// token is allowed or every allowed logit is minus infinity or NaN.
    pub fn sample(&mut self, logits: &[f32], allowed: Option<&TokenBitmask>) -> Option<u32> {
        if self.params.is_greedy() {
            return argmax(logits, allowed);
        }
        self.candidates.clear();
        match allowed {
            Some(mask) => {
                for id in mask.ids() {
                    if let Some(&logit) = logits.get(id as usize) {
                        push_finite(&mut self.candidates, id, logit);
                    }
                }
            }
            None => {
                for (id, &logit) in logits.iter().enumerate() {
                    push_finite(&mut self.candidates, id as u32, logit);
                }
            }
        }
        draw(&mut self.candidates, &self.params, &mut self.rng)
    }
}

fn push_finite(candidates: &mut Vec<(u32, f32)>, id: u32, logit: f32) {
    if logit.is_finite() {
        candidates.push((id, logit));
    }
}

/// `logits` with the repeat penalty applied to the tokens among `recent` (see
/// [`SamplingParams::repeat_penalty`]), written into `scratch`; `logits` itself when the
/// penalty is off.
pub fn penalized<'a>(
    logits: &'a [f32],
    recent: &[u32],
    params: &SamplingParams,
    scratch: &'a mut Vec<f32>,
) -> &'a [f32] {
    if params.repeat_penalty == 1.0 || recent.is_empty() || params.repeat_last_n == 0 {
        return logits;
    }
    scratch.clear();
    scratch.extend_from_slice(logits);
    let start = recent.len().saturating_sub(params.repeat_last_n);
    let mut seen = recent[start..].to_vec();
    seen.sort_unstable();
    seen.dedup();
    for id in seen {
        if let Some(logit) = scratch.get_mut(id as usize) {
            *logit = if *logit > 0.0 {
                *logit / params.repeat_penalty
            } else {
                *logit * params.repeat_penalty
            };
        }
    }
    scratch
}

/// The allowed token with the highest logit (the lowest id among equals).
pub fn argmax(logits: &[f32], allowed: Option<&TokenBitmask>) -> Option<u32> {
    let mut best: Option<(u32, f32)> = None;
    let mut consider = |id: u32, logit: f32| {
        if logit.is_nan() || logit == f32::NEG_INFINITY {
            return;
        }
        if best.is_none_or(|(_, top)| logit > top) {
            best = Some((id, logit));
        }
    };
    match allowed {
        Some(mask) => {
            for id in mask.ids() {
                if let Some(&logit) = logits.get(id as usize) {
                    consider(id, logit);
                }
            }
        }
        None => {
            for (id, &logit) in logits.iter().enumerate() {
                consider(id as u32, logit);
            }
        }
    }
    best.map(|(id, _)| id)
}

/// Draws from `candidates` (id, logit): temperature, then top-k, then top-p over the
/// softmax, then one draw.
fn draw(candidates: &mut [(u32, f32)], params: &SamplingParams, rng: &mut SmallRng) -> Option<u32> {
    if candidates.is_empty() {
        return None;
    }
    let by_logit = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    let mut kept = candidates.len();
    if params.top_k > 0 && params.top_k < kept {
        candidates.select_nth_unstable_by(params.top_k - 1, by_logit);
        kept = params.top_k;
    }
    let candidates = &mut candidates[..kept];
    candidates.sort_unstable_by(by_logit);
    let top = candidates[0].1;
    let mut total = 0.0f64;
    let weights: Vec<f64> = candidates
        .iter()
        .map(|&(_, logit)| {
            let weight = (((logit - top) / params.temperature) as f64).exp();
            total += weight;
            weight
        })
        .collect();
    let mut kept = weights.len();
    if params.top_p < 1.0 {
        let mut sum = 0.0;
        for (position, weight) in weights.iter().enumerate() {
            sum += weight / total;
            if sum >= params.top_p as f64 {
                kept = position + 1;
                break;
            }
        }
    }
    let total: f64 = weights[..kept].iter().sum();
    let mut point = rng.random::<f64>() * total;
    for (position, weight) in weights[..kept].iter().enumerate() {
        if point < *weight {
            return Some(candidates[position].0);
        }
        point -= weight;
    }
    Some(candidates[kept - 1].0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mask_of(len: usize, ids: &[u32]) -> TokenBitmask {
        let mut mask = TokenBitmask::new(len);
        for &id in ids {
            mask.set(id);
        }
        mask
    }

    #[test]
    fn greedy_takes_the_best_allowed_token() {
        let logits = [0.5, 3.0, 1.0, 2.0];
        assert_eq!(argmax(&logits, None), Some(1));
        assert_eq!(argmax(&logits, Some(&mask_of(4, &[0, 2, 3]))), Some(3));
        assert_eq!(argmax(&logits, Some(&mask_of(4, &[]))), None);
        assert_eq!(argmax(&[f32::NEG_INFINITY, f32::NAN], None), None);
    }

    #[test]
    fn draws_only_allowed_tokens_and_repeats_with_a_seed() {
        let logits = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
        let params = SamplingParams {
            temperature: 1.0,
            seed: 7,
            ..SamplingParams::default()
        };
        let allowed = mask_of(6, &[1, 4]);
        let draws = |params: &SamplingParams| {
            let mut sampler = TokenSampler::new(params.clone());
            (0..200)
                .map(|_| sampler.sample(&logits, Some(&allowed)).unwrap())
                .collect::<Vec<_>>()
        };
        let first = draws(&params);
        assert!(first.iter().all(|id| *id == 1 || *id == 4));
        assert!(first.contains(&1) && first.contains(&4), "both are drawn");
        assert_eq!(first, draws(&params), "a seed repeats its draws");
    }

    #[test]
    fn top_k_and_top_p_cut_the_tail() {
        let logits = [5.0, 4.0, 0.0, -1.0];
        let mut top_k = TokenSampler::new(SamplingParams {
            temperature: 1.0,
            top_k: 2,
            ..SamplingParams::default()
        });
        let mut top_p = TokenSampler::new(SamplingParams {
            temperature: 1.0,
            top_p: 0.5,
            ..SamplingParams::default()
        });
        for _ in 0..300 {
            assert!(top_k.sample(&logits, None).unwrap() <= 1);
            // p(0) = e^5 / (e^5 + e^4 + 1 + e^-1) ≈ 0.72 ≥ 0.5: token 0 alone.
            assert_eq!(top_p.sample(&logits, None), Some(0));
        }
    }

    #[test]
    fn the_repeat_penalty_lowers_recent_tokens_only() {
        let logits = [2.0, -1.0, 1.5, 0.5];
        let params = SamplingParams {
            repeat_penalty: 2.0,
            repeat_last_n: 2,
            ..SamplingParams::default()
        };
        let mut scratch = Vec::new();
        // Token 0 is outside the last two; 1 and 2 are inside (2 twice, penalized once).
        let out = penalized(&logits, &[0, 2, 1, 2], &params, &mut scratch);
        assert_eq!(out, [2.0, -2.0, 0.75, 0.5]);
        let off = SamplingParams::default();
        assert_eq!(penalized(&logits, &[0, 1], &off, &mut scratch), logits);
    }

    #[test]
    fn parameters_are_checked() {
        let bad = SamplingParams {
            top_p: 0.0,
            ..SamplingParams::default()
        };
        assert!(bad.validate().is_err());
        let bad = SamplingParams {
            temperature: -1.0,
            ..SamplingParams::default()
        };
        assert!(bad.validate().is_err());
        assert!(SamplingParams::default().validate().is_ok());
    }
}
