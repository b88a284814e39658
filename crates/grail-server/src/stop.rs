//! OpenAI's `stop` sequences over streamed text: text is released only once no stop
//! sequence can start in it, and the output ends before the first stop sequence.

/// Scans streamed text for stop sequences.
#[derive(Debug, Clone, Default)]
pub struct StopScanner {
    stops: Vec<String>,
    /// Text seen so far.
    text: String,
    /// How much of it has been released.
    released: usize,
    /// Where the first stop sequence starts, once one is found.
    hit: Option<usize>,
}

impl StopScanner {
    /// A scanner for `stops` (empty sequences are ignored).
    pub fn new(stops: Vec<String>) -> StopScanner {
        StopScanner {
            stops: stops.into_iter().filter(|stop| !stop.is_empty()).collect(),
            ..StopScanner::default()
        }
    }

    /// Adds `piece`; returns the text that may be released now.
    pub fn push(&mut self, piece: &str) -> &str {
        if self.hit.is_some() {
            return "";
        }
        let searched_from = self.released;
        self.text.push_str(piece);
        let hit = self
            .stops
            .iter()
            .filter_map(|stop| {
                // A stop may straddle what was held back and the new piece.
                self.text[searched_from..]
                    .find(stop.as_str())
                    .map(|at| searched_from + at)
            })
            .min();
        let end = match hit {
            Some(at) => {
                self.hit = Some(at);
                at
            }
            None => {
                // Hold back the longest tail that could begin a stop sequence.
                let held = self
                    .stops
                    .iter()
                    .map(|stop| longest_prefix_suffix(&self.text[searched_from..], stop))
                    .max()
                    .unwrap_or(0);
                self.text.len() - held
            }
        };
        let start = self.released;
        self.released = end.max(start);
        &self.text[start..self.released]
    }

    /// True once a stop sequence was seen.
    pub fn stopped(&self) -> bool {
        self.hit.is_some()
    }

    /// The text up to the first stop sequence (all of it when there was none).
    pub fn text(&self) -> &str {
        &self.text[..self.hit.unwrap_or(self.text.len())]
    }

    /// At the end of the output: the held-back text (no stop sequence can start in it
    /// any more).
    pub fn finish(&mut self) -> &str {
        let start = self.released;
        self.released = self.hit.unwrap_or(self.text.len());
        &self.text[start..self.released]
    }
}

/// The length of the longest suffix of `text` that is a proper prefix of `stop`, on
/// character boundaries.
fn longest_prefix_suffix(text: &str, stop: &str) -> usize {
    let most = text.len().min(stop.len().saturating_sub(1));
    (1..=most)
        .rev()
        .find(|&length| {
            let start = text.len() - length;
            text.is_char_boundary(start) && stop.starts_with(&text[start..])
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::StopScanner;

    fn run(stops: &[&str], pieces: &[&str]) -> (String, String, bool) {
        let mut scanner = StopScanner::new(stops.iter().map(|s| s.to_string()).collect());
        let mut released = String::new();
        for piece in pieces {
            released.push_str(scanner.push(piece));
        }
        released.push_str(scanner.finish());
        (released, scanner.text().to_string(), scanner.stopped())
    }

    #[test]
    fn a_stop_split_over_pieces_is_found_and_never_released() {
        let (released, text, stopped) = run(&["END"], &["abc E", "N", "D more"]);
        assert_eq!(
            (released.as_str(), text.as_str(), stopped),
            ("abc ", "abc ", true)
        );
    }

    #[test]
    fn held_back_text_is_released_when_it_cannot_start_a_stop() {
        let mut scanner = StopScanner::new(vec!["END".into()]);
        assert_eq!(scanner.push("abc E"), "abc ");
        assert_eq!(scanner.push("x"), "Ex");
        assert_eq!(scanner.finish(), "");
        assert!(!scanner.stopped());
    }

    #[test]
    fn without_stops_everything_passes() {
        let (released, text, stopped) = run(&[], &["é", "x"]);
        assert_eq!(
            (released.as_str(), text.as_str(), stopped),
            ("éx", "éx", false)
        );
    }

    #[test]
    fn the_earliest_of_several_stops_wins() {
        let (released, _, stopped) = run(&["b", "cd"], &["a", "cdb"]);
        assert_eq!((released.as_str(), stopped), ("a", true));
    }
}
