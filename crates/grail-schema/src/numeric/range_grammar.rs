//! Number and integer ranges as grammars: per exponent band, the mantissas in range
//! ([`Ranges`]), and unsigned texts in an interval digit by digit ([`Magnitudes`]).

use super::*;

// ---------------------------------------------------------------------------------------
// Ranges
// ---------------------------------------------------------------------------------------

/// Signed number texts in a range.
pub(super) struct Ranges<'a> {
    pub(super) syntax: &'a NumberSyntax,
    pub(super) kind: Kind,
    /// Values must be multiples of `10^power_of_ten`.
    pub(super) power_of_ten: Option<i64>,
}

/// How the nonzero mantissas of one exponent value fare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Band {
    /// None satisfies the constraints.
    Empty,
    /// All do.
    All,
    /// Some do: the exponent needs a mantissa language of its own.
    Partial,
}

/// A run of exponent values `low..=high` (`None`: unbounded) in one band.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ExponentRun {
    pub(super) low: Option<i64>,
    pub(super) high: Option<i64>,
    pub(super) band: Band,
}

impl Ranges<'_> {
    /// Texts with value in `[min, max]`: zero, positive and negative texts.
    pub(super) fn signed(
        &self,
        min: Option<&Bound>,
        max: Option<&Bound>,
    ) -> Result<Option<Expr>, NumericError> {
        let mut parts = Vec::new();
        if within(min, max, &Decimal::zero()) {
            parts.push(self.zero_texts()?);
        }
        if max.is_none_or(|max| max.value.is_positive()) {
            let lower = match min {
                Some(min) if min.value.is_positive() => min.clone(),
                _ => Bound::exclusive(Decimal::zero()),
            };
            if let Some(texts) = self.nonzero(&lower, max)? {
                parts.push(texts);
            }
        }
        if min.is_none_or(|min| min.value.is_negative()) {
            let lower = match max {
                Some(max) if max.value.is_negative() => max.negated(),
                _ => Bound::exclusive(Decimal::zero()),
            };
            let upper = min.map(Bound::negated);
            if let Some(texts) = self.nonzero(&lower, upper.as_ref())? {
                parts.push(seq([Expr::literal("-"), texts]));
            }
        }
        Ok(choice(parts))
    }

    /// The texts of 0: `0` for integers; `-`? `0` (`.` `0`+)? exponent? for numbers.
    pub(super) fn zero_texts(&self) -> Result<Expr, NumericError> {
        if self.kind == Kind::Integer {
            return Ok(zero_digit());
        }
        let fraction = match self.syntax.fraction_cap() {
            Some(0) => Expr::Empty,
            cap => optional(seq([Expr::literal("."), counted(zero_digit(), 1, cap)?])),
        };
        Ok(seq([
            optional(Expr::literal("-")),
            zero_digit(),
            fraction,
            exponent_suffix(self.syntax, None, None)?.unwrap_or(Expr::Empty),
        ]))
    }

    /// Mantissas in `[lower, upper]` for exponent `exponent` (the bounds already
    /// shifted), masked for `multipleOf`.
    pub(super) fn mantissas(
        &self,
        lower: Bound,
        upper: Option<Bound>,
        exponent: i64,
    ) -> Magnitudes {
        Magnitudes {
            lower: Some(lower),
            upper,
            integer_cap: self.syntax.integer_cap(),
            fraction_cap: self.syntax.fraction_cap(),
            zero_from_point: self
                .power_of_ten
                .map(|power| exponent.saturating_sub(power)),
            leading_zeros: false,
            single_digit_is_zero: false,
        }
    }

    /// Every nonzero mantissa.
    pub(super) fn all_mantissas(&self) -> Result<Option<Expr>, NumericError> {
        let mut mantissas = self.mantissas(Bound::exclusive(Decimal::zero()), None, 0);
        mantissas.zero_from_point = None;
        mantissas.expr()
    }

    /// Unsigned texts of nonzero values `v` above `lower` (≥ or >) and below `upper`
    /// (≤ or <); `lower` is at least "above 0".
    pub(super) fn nonzero(
        &self,
        lower: &Bound,
        upper: Option<&Bound>,
    ) -> Result<Option<Expr>, NumericError> {
        if !self.syntax.exponent_allowed() {
            return self.mantissas(lower.clone(), upper.cloned(), 0).expr();
        }
        if self.syntax.scientific_exponent {
            return self.scientific_nonzero(lower, upper);
        }
        if lower.value.is_zero() && upper.is_none() && self.power_of_ten.is_none() {
            let Some(mantissas) = self.all_mantissas()? else {
                return Ok(None);
            };
            return Ok(
                exponent_suffix(self.syntax, None, None)?.map(|suffix| seq([mantissas, suffix]))
            );
        }
        let mut parts = Vec::new();
        let mut all_mantissas: Option<Option<Expr>> = None;
        for run in self.exponent_runs(lower, upper)? {
            let mantissas = match run.band {
                Band::Empty => continue,
                Band::All => match &all_mantissas {
                    Some(mantissas) => mantissas.clone(),
                    None => {
                        let mantissas = self.all_mantissas()?;
                        all_mantissas = Some(mantissas.clone());
                        mantissas
                    }
                },
                Band::Partial => {
                    let Some(exponent) = run.low else { continue };
                    self.mantissas(
                        lower.shifted(-exponent),
                        upper.map(|upper| upper.shifted(-exponent)),
                        exponent,
                    )
                    .expr()?
                }
            };
            if let (Some(mantissas), Some(suffix)) =
                (mantissas, exponent_suffix(self.syntax, run.low, run.high)?)
            {
                parts.push(seq([mantissas, suffix]));
            }
        }
        Ok(choice(parts))
    }

    /// [`Ranges::nonzero`] when exponents are written in scientific notation
    /// ([`NumberSyntax::scientific_exponent`]): the texts without exponent, then per
    /// exponent `e` the mantissas in `[1, 10)` whose value `m × 10^e` is in range. Every
    /// exponent whose decade `[10^e, 10^(e+1))` lies inside the range takes all mantissas
    /// (grouped into runs of exponents), those outside none; only the decades of the
    /// bounds need mantissa languages of their own.
    fn scientific_nonzero(
        &self,
        lower: &Bound,
        upper: Option<&Bound>,
    ) -> Result<Option<Expr>, NumericError> {
        let plain_syntax = NumberSyntax {
            max_exponent_digits: Some(0),
            scientific_exponent: false,
            ..self.syntax.clone()
        };
        let plain = Ranges {
            syntax: &plain_syntax,
            ..*self
        }
        .nonzero(lower, upper)?;
        let one_digit = NumberSyntax {
            max_integer_digits: Some(1),
            scientific_exponent: false,
            ..self.syntax.clone()
        };
        let scientific = Ranges {
            syntax: &one_digit,
            ..*self
        };
        let largest = self
            .syntax
            .max_exponent_digits
            .filter(|&digits| digits <= 18)
            .map(|digits| 10i64.pow(digits) - 1)
            .ok_or_else(|| {
                NumericError::Unsupported(
                    "scientific notation needs an exponent of at most 18 digits".into(),
                )
            })?;
        if 2 * largest + 1 > MAX_EXPONENT_BANDS as i64 * 8 {
            return Err(NumericError::TooLarge(format!(
                "{} exponent values to classify",
                2 * largest + 1
            )));
        }
        let one = Bound::inclusive(Decimal::power_of_ten(0));
        let ten = Bound::exclusive(Decimal::power_of_ten(1));
        let mut parts: Vec<Expr> = plain.into_iter().collect();
        // The mantissas in `[lower, upper]` (within `[1, 10)`) with the exponents
        // `low..=high`.
        let push = |parts: &mut Vec<Expr>, lower: Bound, upper: Bound, low: i64, high: i64| {
            let mantissas = scientific.mantissas(lower, Some(upper), low).expr()?;
            if let (Some(mantissas), Some(suffix)) = (
                mantissas,
                exponent_suffix(self.syntax, Some(low), Some(high))?,
            ) {
                parts.push(seq([mantissas, suffix]));
            }
            Ok::<(), NumericError>(())
        };
        // A run of exponents whose decades are wholly in range: every mantissa, in one
        // language unless `multipleOf` masks depend on the exponent.
        let push_run = |parts: &mut Vec<Expr>, (first, last): (i64, i64)| {
            if self.power_of_ten.is_some() {
                for exponent in first..=last {
                    push(parts, one.clone(), ten.clone(), exponent, exponent)?;
                }
                Ok(())
            } else {
                push(parts, one.clone(), ten.clone(), first, last)
            }
        };
        let mut run: Option<(i64, i64)> = None;
        for exponent in -largest..=largest {
            let decade_low = Decimal::power_of_ten(exponent);
            let decade_high = Decimal::power_of_ten(exponent + 1);
            let below = upper.is_some_and(|upper| {
                upper.value < decade_low || (upper.value == decade_low && upper.exclusive)
            });
            let above = lower.value >= decade_high;
            let whole = (lower.value < decade_low
                || (lower.value == decade_low && !lower.exclusive))
                && upper.is_none_or(|upper| upper.value >= decade_high);
            if whole {
                run = Some(run.map_or((exponent, exponent), |(first, _)| (first, exponent)));
                continue;
            }
            if let Some(done) = run.take() {
                push_run(&mut parts, done)?;
            }
            if below || above {
                continue;
            }
            // A bound's decade: the mantissas of `[1, 10)` in the shifted range.
            let shifted_lower = lower.shifted(-exponent);
            let mantissa_lower = if shifted_lower.value > one.value
                || (shifted_lower.value == one.value && shifted_lower.exclusive)
            {
                shifted_lower
            } else {
                one.clone()
            };
            let mantissa_upper = match upper.map(|upper| upper.shifted(-exponent)) {
                Some(shifted) if shifted.value < ten.value => shifted,
                _ => ten.clone(),
            };
            push(
                &mut parts,
                mantissa_lower,
                mantissa_upper,
                exponent,
                exponent,
            )?;
        }
        if let Some(done) = run.take() {
            push_run(&mut parts, done)?;
        }
        Ok(choice(parts))
    }

    /// How the nonzero mantissas fare at exponent `exponent`.
    pub(super) fn classify(&self, lower: &Bound, upper: Option<&Bound>, exponent: i64) -> Band {
        let lower = lower.shifted(-exponent);
        let upper = upper.map(|upper| upper.shifted(-exponent));
        let integer_cap = self.syntax.integer_cap();
        let fraction_cap = self.syntax.fraction_cap();
        // The smallest nonzero mantissa (None: arbitrarily close to 0) and the largest
        // (None: unbounded), and whether that largest is attained.
        let smallest = fraction_cap.map(|digits| Decimal::power_of_ten(-digits));
        let largest = match (integer_cap, fraction_cap) {
            (Some(integer), Some(fraction)) => Some((Decimal::all_nines(integer, fraction), true)),
            (Some(integer), None) => Some((Decimal::power_of_ten(integer), false)),
            (None, _) => None,
        };
        let upper_below_all = upper.as_ref().is_some_and(|upper| match &smallest {
            Some(smallest) => {
                upper.value < *smallest || (upper.value == *smallest && upper.exclusive)
            }
            None => false,
        });
        let lower_above_all = match &largest {
            Some((largest, attained)) => {
                lower.value > *largest
                    || (lower.value == *largest && (lower.exclusive || !attained))
            }
            None => false,
        };
        let lower_covers = match &smallest {
            Some(smallest) => {
                lower.value < *smallest || (lower.value == *smallest && !lower.exclusive)
            }
            None => lower.value.is_zero(),
        };
        let upper_covers = match (&upper, &largest) {
            (None, _) => true,
            (Some(upper), Some((largest, attained))) => {
                upper.value > *largest
                    || (upper.value == *largest && (!upper.exclusive || !attained))
            }
            (Some(_), None) => false,
        };
        let (mask_empty, mask_inactive) = match self.power_of_ten {
            None => (false, true),
            Some(power) => {
                let zero_from = exponent.saturating_sub(power);
                (
                    integer_cap.is_some_and(|digits| zero_from <= -digits),
                    fraction_cap.is_some_and(|digits| zero_from >= digits),
                )
            }
        };
        if upper_below_all || lower_above_all || mask_empty {
            Band::Empty
        } else if lower_covers && upper_covers && mask_inactive {
            Band::All
        } else {
            Band::Partial
        }
    }

    /// All exponent values, as runs in increasing order; `Partial` runs are single
    /// exponents. Only windows around the bounds' magnitudes (and the `multipleOf`
    /// power) are looked at one by one; between and beyond them the band cannot change.
    pub(super) fn exponent_runs(
        &self,
        lower: &Bound,
        upper: Option<&Bound>,
    ) -> Result<Vec<ExponentRun>, NumericError> {
        let exponent_range = self
            .syntax
            .max_exponent_digits
            .filter(|&digits| digits <= 18)
            .map(|digits| 10i64.pow(digits) - 1);
        let mut windows: Vec<(i64, i64)> = Vec::new();
        match (self.syntax.integer_cap(), self.syntax.fraction_cap()) {
            (Some(integer), Some(fraction)) => {
                let centers = [Some(lower), upper]
                    .into_iter()
                    .flatten()
                    .filter(|bound| !bound.value.is_zero())
                    .map(|bound| bound.value.leading_power())
                    .chain(self.power_of_ten);
                for center in centers {
                    windows.push((
                        center.saturating_sub(integer.saturating_add(3)),
                        center.saturating_add(fraction.saturating_add(3)),
                    ));
                }
            }
            _ => match exponent_range {
                Some(range) => windows.push((-range, range)),
                None => {
                    return Err(NumericError::Unsupported(format!(
                        "numbers with {} and exponents of unlimited digits: texts like 0.0…01e+K \
                         compare a count of digits with the exponent's value, which is not \
                         regular; cap the integer and fraction digits (llama.cpp mode) or \
                         write numbers without exponent",
                        describe_range(lower, upper, self.power_of_ten)
                    )));
                }
            },
        }
        if let Some(range) = exponent_range {
            windows = windows
                .into_iter()
                .map(|(low, high)| (low.max(-range), high.min(range)))
                .filter(|(low, high)| low <= high)
                .collect();
        }
        windows.sort_unstable();
        let mut merged: Vec<(i64, i64)> = Vec::new();
        for (low, high) in windows {
            match merged.last_mut() {
                Some(last) if low <= last.1.saturating_add(1) => last.1 = last.1.max(high),
                _ => merged.push((low, high)),
            }
        }
        let walked: i64 = merged
            .iter()
            .map(|(low, high)| high.saturating_sub(*low).saturating_add(1))
            .fold(0, i64::saturating_add);
        let too_many = |count: i64| {
            NumericError::TooLarge(format!(
                "{count} exponent values would each need their own mantissa grammar (limit \
                 {MAX_EXPONENT_BANDS})"
            ))
        };
        if walked > 4 * MAX_EXPONENT_BANDS as i64 {
            return Err(too_many(walked));
        }
        let mut runs: Vec<ExponentRun> = Vec::new();
        let mut push = |run: ExponentRun| {
            if let Some(last) = runs.last_mut()
                && last.band == run.band
                && run.band != Band::Partial
            {
                last.high = run.high;
            } else {
                runs.push(run);
            }
        };
        let floor = exponent_range.map(|range| -range);
        let ceiling = exponent_range;
        let mut cursor = floor;
        let mut partial = 0i64;
        for &(low, high) in &merged {
            if cursor.is_none_or(|cursor| cursor < low) {
                let gap_high = Some(low - 1);
                push(ExponentRun {
                    low: cursor,
                    high: gap_high,
                    band: self.stretch(lower, upper, cursor, gap_high)?,
                });
            }
            for exponent in low..=high {
                let band = self.classify(lower, upper, exponent);
                partial += i64::from(band == Band::Partial);
                push(ExponentRun {
                    low: Some(exponent),
                    high: Some(exponent),
                    band,
                });
            }
            cursor = Some(high.saturating_add(1));
        }
        if merged.is_empty() {
            push(ExponentRun {
                low: floor,
                high: ceiling,
                band: self.stretch(lower, upper, floor, ceiling)?,
            });
        } else if let Some(start) = cursor
            && ceiling.is_none_or(|ceiling| start <= ceiling)
        {
            push(ExponentRun {
                low: Some(start),
                high: ceiling,
                band: self.stretch(lower, upper, Some(start), ceiling)?,
            });
        }
        if partial > MAX_EXPONENT_BANDS as i64 {
            return Err(too_many(partial));
        }
        Ok(runs)
    }

    /// The band of a stretch of exponents outside every window (the same for all of
    /// them: checked at its finite ends).
    pub(super) fn stretch(
        &self,
        lower: &Bound,
        upper: Option<&Bound>,
        low: Option<i64>,
        high: Option<i64>,
    ) -> Result<Band, NumericError> {
        let mut probes: Vec<i64> = [low, high].into_iter().flatten().collect();
        if probes.is_empty() {
            probes.push(0);
        }
        let bands: Vec<Band> = probes
            .iter()
            .map(|&exponent| self.classify(lower, upper, exponent))
            .collect();
        match bands.first() {
            Some(&band) if band != Band::Partial && bands.iter().all(|&other| other == band) => {
                Ok(band)
            }
            _ => Err(NumericError::Unsupported(format!(
                "internal: the exponent bands of numbers {} are not monotone",
                describe_range(lower, upper, self.power_of_ten)
            ))),
        }
    }
}

/// `|x| > 1.5 and ≤ 100 (multiples of 0.01)` for messages (one sign's magnitudes).
pub(super) fn describe_range(
    lower: &Bound,
    upper: Option<&Bound>,
    power_of_ten: Option<i64>,
) -> String {
    let mut text = format!(
        "|x| {} {}",
        if lower.exclusive { ">" } else { "≥" },
        lower.value
    );
    if let Some(upper) = upper {
        text.push_str(&format!(
            " and {} {}",
            if upper.exclusive { "<" } else { "≤" },
            upper.value
        ));
    }
    if let Some(power) = power_of_ten {
        text.push_str(&format!(" (multiples of {})", Decimal::power_of_ten(power)));
    }
    text
}

// ---------------------------------------------------------------------------------------
// Magnitudes: unsigned texts in an interval, digit by digit
// ---------------------------------------------------------------------------------------

/// Unsigned texts without exponent (an integer part, canonical or with leading zeros,
/// and an optional fraction) whose value lies in an interval of values ≥ 0.
///
/// Texts are grouped by the length of their integer part. For lengths strictly between
/// the bounds' integer lengths every text qualifies (`[1-9] [0-9]{a,b}` and any
/// fraction); for a bound's own length the text is compared with the bound digit by digit
/// ("still equal to the bound's digits so far" or not), which gives one nested
/// alternative per digit of the bound.
#[derive(Debug, Clone)]
pub(super) struct Magnitudes {
    /// `None`: ≥ 0.
    pub(super) lower: Option<Bound>,
    /// `None`: unbounded.
    pub(super) upper: Option<Bound>,
    pub(super) integer_cap: Option<i64>,
    pub(super) fraction_cap: Option<i64>,
    /// Fraction digits at index `zero_from_point` and after must be 0; a negative value
    /// reaches into the integer part (`-2`: the last two integer digits too). That is,
    /// the value is a multiple of `10^-zero_from_point`.
    pub(super) zero_from_point: Option<i64>,
    /// Integer parts may have leading zeros (exponents in JSON).
    pub(super) leading_zeros: bool,
    /// A one-digit integer part must be `0` (the other one-digit texts are in a band).
    pub(super) single_digit_is_zero: bool,
}

impl Magnitudes {
    pub(super) fn expr(&self) -> Result<Option<Expr>, NumericError> {
        let mut this = self.clone();
        if this.lower.as_ref().is_some_and(|lower| {
            lower.value.is_negative() || (lower.value.is_zero() && !lower.exclusive)
        }) {
            this.lower = None;
        }
        if let Some(upper) = &this.upper {
            if upper.value.is_negative() || (upper.value.is_zero() && upper.exclusive) {
                return Ok(None);
            }
            if let Some(lower) = &this.lower
                && (lower.value > upper.value
                    || (lower.value == upper.value && (lower.exclusive || upper.exclusive)))
            {
                return Ok(None);
            }
            // An upper bound longer than any writable integer part binds nothing.
            if this
                .integer_cap
                .is_some_and(|cap| upper.value.integer_length() > cap)
            {
                this.upper = None;
            }
        }
        if let Some(lower) = &this.lower
            && this
                .integer_cap
                .is_some_and(|cap| lower.value.integer_length() > cap)
        {
            return Ok(None);
        }
        for bound in [&this.lower, &this.upper].into_iter().flatten() {
            let integer = bound.value.integer_length();
            let fraction = match this.fraction_cap {
                Some(cap) => bound.value.fraction_length().min(cap),
                None => bound.value.fraction_length(),
            };
            if integer.saturating_add(fraction) > MAX_POSITIONS {
                return Err(NumericError::TooLarge(format!(
                    "the bound {} pins more than {MAX_POSITIONS} digit places",
                    bound.value
                )));
            }
        }
        if this.leading_zeros {
            this.with_leading_zeros()
        } else {
            this.canonical()
        }
    }

    pub(super) fn canonical(&self) -> Result<Option<Expr>, NumericError> {
        let lower_length = self
            .lower
            .as_ref()
            .map_or(1, |lower| lower.value.integer_length());
        let upper_length = self
            .upper
            .as_ref()
            .map(|upper| upper.value.integer_length());
        let longest = match (self.integer_cap, upper_length) {
            (Some(cap), Some(length)) => Some(cap.min(length)),
            (cap, length) => cap.or(length),
        };
        if longest.is_some_and(|longest| lower_length > longest) {
            return Ok(None);
        }
        // Below 1 and above 9 allowed: the one-digit integer parts 1-9 all qualify and
        // join the band of longer ones (`[1-9] [0-9]{0,15}`).
        let below_one = self
            .lower
            .as_ref()
            .is_none_or(|lower| lower.value < Decimal::power_of_ten(0));
        let merge_single_digits = below_one && upper_length != Some(1);
        let mut parts = Vec::new();
        let first = Magnitudes {
            single_digit_is_zero: merge_single_digits,
            ..self.clone()
        };
        parts.extend(first.frame(
            lower_length,
            self.lower.is_some(),
            upper_length == Some(lower_length),
        )?);
        let band_start = if merge_single_digits {
            1
        } else {
            (lower_length + 1).max(2)
        };
        let band_end = match upper_length {
            Some(length) => Some(length - 1),
            None => longest,
        };
        if band_end.is_none_or(|end| end >= band_start) {
            parts.extend(self.band(band_start, band_end)?);
        }
        if let Some(length) = upper_length
            && length > lower_length
        {
            parts.extend(self.frame(length, false, true)?);
        }
        Ok(choice(parts))
    }

    pub(super) fn with_leading_zeros(&self) -> Result<Option<Expr>, NumericError> {
        let Some(cap) = self.integer_cap else {
            let canonical = Magnitudes {
                leading_zeros: false,
                ..self.clone()
            }
            .canonical()?;
            return Ok(canonical.map(|texts| seq([zero_digit().zero_or_more(), texts])));
        };
        if cap > MAX_POSITIONS {
            return Err(NumericError::TooLarge(format!(
                "{cap} digits with leading zeros"
            )));
        }
        let mut parts = Vec::new();
        for width in 1..=cap {
            let lower_tight = match &self.lower {
                Some(lower) if lower.value.integer_length() > width => continue,
                Some(_) => true,
                None => false,
            };
            let upper_tight = self
                .upper
                .as_ref()
                .is_some_and(|upper| upper.value.integer_length() <= width);
            parts.extend(self.frame(width, lower_tight, upper_tight)?);
        }
        Ok(choice(parts))
    }

    /// Texts whose integer part has `length` digits.
    pub(super) fn frame(
        &self,
        length: i64,
        lower_tight: bool,
        upper_tight: bool,
    ) -> Result<Option<Expr>, NumericError> {
        self.rest(length, 0, lower_tight, upper_tight)
    }

    /// Texts whose integer part has `start..=end` digits, first digit not 0, all
    /// qualifying.
    pub(super) fn band(&self, start: i64, end: Option<i64>) -> Result<Option<Expr>, NumericError> {
        let trailing_zeros = self
            .zero_from_point
            .map_or(0, |zero_from| zero_from.saturating_neg().max(0));
        let start = start.max(trailing_zeros.saturating_add(1));
        if end.is_some_and(|end| end < start) {
            return Ok(None);
        }
        let integer = seq([
            nonzero_digit(),
            counted(
                any_digit(),
                start - 1 - trailing_zeros,
                end.map(|end| end - 1 - trailing_zeros),
            )?,
            counted(zero_digit(), trailing_zeros, Some(trailing_zeros))?,
        ]);
        let fraction = self
            .fraction_digits(0, true)?
            .map_or(Expr::Empty, |digits| {
                optional(seq([Expr::literal("."), digits]))
            });
        Ok(Some(seq([integer, fraction])))
    }

    /// Fraction digits from fraction index `index` on, all qualifying; `nonempty` right
    /// after the point. `None` when no such (nonempty) digits exist.
    pub(super) fn fraction_digits(
        &self,
        index: i64,
        nonempty: bool,
    ) -> Result<Option<Expr>, NumericError> {
        let remaining = self.fraction_cap.map(|cap| (cap - index).max(0));
        if remaining == Some(0) {
            return Ok((!nonempty).then_some(Expr::Empty));
        }
        // Digits that may be anything, then digits that must be 0 (None: unlimited).
        let free = match self.zero_from_point {
            Some(zero_from) => {
                let free = zero_from.saturating_sub(index).max(0);
                Some(remaining.map_or(free, |remaining| free.min(remaining)))
            }
            None => remaining,
        };
        let zeros = match (remaining, free) {
            (Some(remaining), Some(free)) => Some(remaining - free),
            (None, Some(_)) => None,
            (_, None) => Some(0),
        };
        if nonempty && free == Some(0) {
            return Ok(Some(counted(zero_digit(), 1, zeros)?));
        }
        Ok(Some(seq([
            counted(any_digit(), i64::from(nonempty), free)?,
            counted(zero_digit(), 0, zeros)?,
        ])))
    }

    /// The digits allowed at `position` of a text with a `length`-digit integer part
    /// (positions from `length` on are fraction digits), as a range; `None` past the end.
    pub(super) fn allowed(&self, length: i64, position: i64) -> Option<(u8, u8)> {
        if position >= length
            && self
                .fraction_cap
                .is_some_and(|cap| position - length >= cap)
        {
            return None;
        }
        let low = u8::from(position == 0 && length > 1 && !self.leading_zeros);
        let high = match self.zero_from_point {
            Some(zero_from) if position - length >= zero_from => 0,
            _ if position == 0 && length == 1 && self.single_digit_is_zero => 0,
            _ => 9,
        };
        (low <= high).then_some((low, high))
    }

    /// The bound's digit at `position` for a `length`-digit integer part.
    pub(super) fn bound_digit(bound: &Bound, length: i64, position: i64) -> u8 {
        bound.value.digit_at_power(length - 1 - position)
    }

    /// The first position after the bound's last nonzero digit.
    pub(super) fn bound_end(bound: &Bound, length: i64) -> i64 {
        if bound.value.is_zero() {
            0
        } else {
            length.saturating_sub(bound.value.exponent)
        }
    }

    /// The rest of a text from digit `position` on, given that its digits so far equal
    /// the lower bound's (`lower_tight`) and/or the upper bound's (`upper_tight`).
    pub(super) fn rest(
        &self,
        length: i64,
        position: i64,
        lower_tight: bool,
        upper_tight: bool,
    ) -> Result<Option<Expr>, NumericError> {
        grail_syntax::stack::deep(|| self.rest_here(length, position, lower_tight, upper_tight))
    }

    pub(super) fn rest_here(
        &self,
        length: i64,
        position: i64,
        lower_tight: bool,
        upper_tight: bool,
    ) -> Result<Option<Expr>, NumericError> {
        let upper = self.upper.as_ref().filter(|_| upper_tight);
        // Equal to all of an inclusive lower bound: anything that follows is ≥ it.
        let lower = self.lower.as_ref().filter(|lower| {
            lower_tight && (lower.exclusive || position < Magnitudes::bound_end(lower, length))
        });
        if lower.is_none() && upper.is_none() {
            return self.free(length, position);
        }
        if let Some(upper) = upper
            && position >= Magnitudes::bound_end(upper, length)
        {
            // Equal to all of the upper bound: only zeros may follow, and only if the
            // bound is inclusive and the lower bound is passed.
            if lower.is_some() || upper.exclusive {
                return Ok(None);
            }
            return self.zeros_only(length, position);
        }
        let lower_done =
            lower.is_some_and(|lower| position >= Magnitudes::bound_end(lower, length));
        if lower_done && upper.is_none() {
            // Equal to all of an exclusive lower bound: a nonzero digit must follow.
            let limit = [
                self.fraction_cap.map(|cap| length.saturating_add(cap)),
                self.zero_from_point
                    .map(|zero_from| length.saturating_add(zero_from)),
            ]
            .into_iter()
            .flatten()
            .min();
            if limit.is_some_and(|limit| position >= limit) {
                return Ok(None);
            }
            if self.fraction_cap.is_none() && position >= length {
                return self.nonzero_tail(length, position).map(Some);
            }
            if position - length > MAX_POSITIONS {
                return Err(NumericError::TooLarge(format!(
                    "more than {MAX_POSITIONS} fraction digits"
                )));
            }
        }
        if let Some(lower) = lower
            && upper.is_none()
            && !lower_done
            && position >= length
            && self.fraction_cap.is_none()
            && self.zero_from_point.is_none()
        {
            // A run of zeros in the lower bound's fraction (`1e-300`): leave it at any
            // of its digits with a nonzero digit, or follow all of it.
            let end = Magnitudes::bound_end(lower, length);
            let run = (position..end)
                .take_while(|&place| Magnitudes::bound_digit(lower, length, place) == 0)
                .count() as i64;
            if run >= 2 {
                let after = self.rest(length, position + run, true, false)?;
                let digits = choice(
                    [seq([
                        counted(zero_digit(), 0, Some(run - 1))?,
                        nonzero_digit(),
                        any_digit().zero_or_more(),
                    ])]
                    .into_iter()
                    .chain(after.map(|after| seq([exactly(&zero_digit(), run), after]))),
                );
                return Ok(digits.map(|digits| {
                    if position == length {
                        seq([Expr::literal("."), digits])
                    } else {
                        digits
                    }
                }));
            }
        }
        let mut parts = Vec::new();
        if position >= length && lower.is_none() {
            parts.push(Expr::Empty);
        }
        let mut digit_parts = Vec::new();
        if let Some((allowed_low, allowed_high)) = self.allowed(length, position) {
            let lower_digit = lower.map(|lower| Magnitudes::bound_digit(lower, length, position));
            let upper_digit = upper.map(|upper| Magnitudes::bound_digit(upper, length, position));
            // (low digit, high digit, still equal to lower, still equal to upper)
            let mut groups: Vec<(u8, u8, bool, bool)> = Vec::new();
            match (lower_digit, upper_digit) {
                (Some(low), Some(high)) if low <= high => {
                    groups.push((low, low, true, low == high));
                    if high > low {
                        groups.push((high, high, false, true));
                    }
                    if high > low + 1 {
                        groups.push((low + 1, high - 1, false, false));
                    }
                }
                (Some(_), Some(_)) => {}
                (Some(low), None) => {
                    groups.push((low, low, true, false));
                    if low < 9 {
                        groups.push((low + 1, 9, false, false));
                    }
                }
                (None, Some(high)) => {
                    groups.push((high, high, false, true));
                    if high > 0 {
                        groups.push((0, high - 1, false, false));
                    }
                }
                (None, None) => groups.push((0, 9, false, false)),
            }
            groups.sort_unstable();
            // (low digit, high digit, what follows), neighbours with the same rest merged.
            let mut continued: Vec<(u8, u8, Expr)> = Vec::new();
            for (low, high, still_lower, still_upper) in groups {
                let (low, high) = (low.max(allowed_low), high.min(allowed_high));
                if low > high {
                    continue;
                }
                let Some(after) = self.rest(length, position + 1, still_lower, still_upper)? else {
                    continue;
                };
                match continued.last_mut() {
                    Some(last) if last.1 + 1 == low && last.2 == after => last.1 = high,
                    _ => continued.push((low, high, after)),
                }
            }
            for (low, high, after) in continued {
                digit_parts.push(seq([digit_range(low, high), after]));
            }
        }
        if let Some(digits) = choice(digit_parts) {
            if position == length {
                parts.push(seq([Expr::literal("."), digits]));
            } else {
                parts.push(digits);
            }
        }
        Ok(choice(parts))
    }

    /// Any rest of a text from `position` on.
    pub(super) fn free(&self, length: i64, position: i64) -> Result<Option<Expr>, NumericError> {
        let mut items = Vec::new();
        if position < length {
            let mut from = position;
            if from == 0 {
                let Some((low, high)) = self.allowed(length, 0) else {
                    return Ok(None);
                };
                items.push(digit_range(low, high));
                from = 1;
            }
            let zeros_from = self.zero_from_point.map_or(length, |zero_from| {
                length.saturating_add(zero_from).clamp(from, length)
            });
            items.push(exactly(&any_digit(), zeros_from - from));
            items.push(exactly(&zero_digit(), length - zeros_from));
        }
        if position <= length {
            if let Some(digits) = self.fraction_digits(0, true)? {
                items.push(optional(seq([Expr::literal("."), digits])));
            }
        } else if let Some(digits) = self.fraction_digits(position - length, false)? {
            items.push(digits);
        }
        Ok(Some(seq(items)))
    }

    /// Zeros only from `position` on (the value stays what it is).
    pub(super) fn zeros_only(
        &self,
        length: i64,
        position: i64,
    ) -> Result<Option<Expr>, NumericError> {
        let mut items = Vec::new();
        if position < length {
            if position == 0 && length > 1 && !self.leading_zeros {
                return Ok(None);
            }
            items.push(exactly(&zero_digit(), length - position));
        }
        let remaining = self
            .fraction_cap
            .map(|cap| (cap - (position - length).max(0)).max(0));
        if position <= length {
            if remaining != Some(0) {
                items.push(optional(seq([
                    Expr::literal("."),
                    counted(zero_digit(), 1, remaining)?,
                ])));
            }
        } else {
            items.push(counted(zero_digit(), 0, remaining)?);
        }
        Ok(Some(seq(items)))
    }

    /// Uncapped fraction digits from `position` on with a nonzero digit before the
    /// `multipleOf` mask, by their last nonzero digit: `[0-9]{0,k-1} [1-9] 0*`.
    pub(super) fn nonzero_tail(&self, length: i64, position: i64) -> Result<Expr, NumericError> {
        let before_mask = self
            .zero_from_point
            .map(|zero_from| length.saturating_add(zero_from) - position - 1);
        let digits = seq([
            counted(any_digit(), 0, before_mask)?,
            nonzero_digit(),
            zero_digit().zero_or_more(),
        ]);
        Ok(if position == length {
            seq([Expr::literal("."), digits])
        } else {
            digits
        })
    }
}
