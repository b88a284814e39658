//! Grammars put together: the union of two grammars as one, with their rules kept apart
//! (the second grammar's rules renamed where a name is taken).

use std::collections::HashSet;

use crate::ir::{Grammar, Rule, RuleId, Sequence, Symbol, SymbolKind};

/// A grammar matching what `first` or `second` matches: a new start rule `root_name`
/// with two alternatives, each grammar's start rule. Every rule of both grammars is
/// kept; a name of `second` already used (or `root_name` itself) gets a numbered suffix.
pub fn union(first: &Grammar, second: &Grammar, root_name: &str) -> Grammar {
    let mut rules: Vec<Rule> = Vec::with_capacity(first.rules.len() + second.rules.len() + 1);
    let mut taken: HashSet<String> = HashSet::new();
    taken.insert(root_name.to_string());
    // The new root comes first; the others move up by one.
    rules.push(Rule {
        name: root_name.to_string(),
        alternatives: Vec::new(),
        span: Default::default(),
    });
    for (grammar, offset) in [(first, 1u32), (second, 1 + first.rules.len() as u32)] {
        for rule in &grammar.rules {
            let name = fresh_name(&rule.name, &mut taken);
            rules.push(Rule {
                name,
                alternatives: rule
                    .alternatives
                    .iter()
                    .map(|sequence| shifted_sequence(sequence, offset))
                    .collect(),
                span: Default::default(),
            });
        }
    }
    let start = |grammar: &Grammar, offset: u32| {
        vec![Symbol::new(SymbolKind::Rule(RuleId(
            grammar.root.0 + offset,
        )))]
    };
    rules[0].alternatives = vec![start(first, 1), start(second, 1 + first.rules.len() as u32)];
    Grammar {
        rules,
        root: RuleId(0),
    }
}

fn fresh_name(name: &str, taken: &mut HashSet<String>) -> String {
    let mut candidate = name.to_string();
    let mut counter = 2;
    while taken.contains(&candidate) {
        candidate = format!("{name}-{counter}");
        counter += 1;
    }
    taken.insert(candidate.clone());
    candidate
}

fn shifted_sequence(sequence: &Sequence, offset: u32) -> Sequence {
    sequence
        .iter()
        .map(|symbol| shifted(symbol, offset))
        .collect()
}

fn shifted(symbol: &Symbol, offset: u32) -> Symbol {
    let kind = match &symbol.kind {
        SymbolKind::Rule(id) => SymbolKind::Rule(RuleId(id.0 + offset)),
        SymbolKind::Group(alternatives) => SymbolKind::Group(
            alternatives
                .iter()
                .map(|sequence| shifted_sequence(sequence, offset))
                .collect(),
        ),
        SymbolKind::Repeat(repetition) => {
            let mut repetition = repetition.clone();
            repetition.symbol = shifted(&repetition.symbol, offset);
            SymbolKind::Repeat(repetition)
        }
        other => other.clone(),
    };
    Symbol::new(kind)
}

#[cfg(test)]
mod tests {
    use super::union;
    use crate::check::{CheckOptions, check};
    use crate::print::print_grammar;

    fn grammar(source: &str) -> crate::ir::Grammar {
        check(source, &CheckOptions::default())
            .grammar
            .expect("valid")
    }

    #[test]
    fn both_languages_with_names_kept_apart() {
        let first = grammar("root ::= item+\nitem ::= [a-c]");
        let second = grammar("root ::= \"x\" item{2}\nitem ::= (\"y\" | \"z\")*");
        let both = union(&first, &second, "root");
        let text = print_grammar(&both);
        // Printed and read back, it is a valid grammar of both languages' strings.
        let again = check(&text, &CheckOptions::default());
        assert!(again.is_ok(), "{text}");
        assert!(text.contains("root ::= root-2 | root-3"), "{text}");
        assert!(text.contains("root-3 ::= \"x\" item-2{2}"), "{text}");
        assert!(text.contains("item-2 ::= (\"y\" | \"z\")*"), "{text}");
        assert!(text.contains("root-2 ::= item+"), "{text}");
    }
}
