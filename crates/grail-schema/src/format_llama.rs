//! The four formats llama.cpp's converter knows, as it writes them (its dialect): `date`,
//! `time`, `date-time` and `uuid`. They are looser than the validators' (any day 01-31 in
//! any month, exactly three fraction digits, `Z` only in upper case, no leap seconds);
//! Grail's own grammars (`format.rs`) are exact and used everywhere else.

use grail_grammar::Expr;

fn digit() -> Expr {
    Expr::chars([('0', '9')])
}

fn hex() -> Expr {
    Expr::chars([('0', '9'), ('a', 'f'), ('A', 'F')])
}

fn date() -> Expr {
    Expr::sequence([
        digit().repeat(4, Some(4)),
        Expr::literal("-"),
        Expr::choice([
            Expr::sequence([Expr::literal("0"), Expr::chars([('1', '9')])]),
            Expr::sequence([Expr::literal("1"), Expr::chars([('0', '2')])]),
        ]),
        Expr::literal("-"),
        Expr::choice([
            Expr::sequence([Expr::literal("0"), Expr::chars([('1', '9')])]),
            Expr::sequence([Expr::chars([('1', '2')]), digit()]),
            Expr::sequence([Expr::literal("3"), Expr::chars([('0', '1')])]),
        ]),
    ])
}

fn hour() -> Expr {
    Expr::choice([
        Expr::sequence([Expr::chars([('0', '1')]), digit()]),
        Expr::sequence([Expr::literal("2"), Expr::chars([('0', '3')])]),
    ])
}

fn time() -> Expr {
    let sixty = || Expr::sequence([Expr::chars([('0', '5')]), digit()]);
    Expr::sequence([
        hour(),
        Expr::literal(":"),
        sixty(),
        Expr::literal(":"),
        sixty(),
        Expr::sequence([Expr::literal("."), digit().repeat(3, Some(3))]).optional(),
        Expr::choice([
            Expr::literal("Z"),
            Expr::sequence([
                Expr::chars([('+', '+'), ('-', '-')]),
                hour(),
                Expr::literal(":"),
                sixty(),
            ]),
        ]),
    ])
}

/// The characters (between the quotes) of llama.cpp's grammar for `format`, if it has one.
pub fn llama_format(name: &str) -> Option<Expr> {
    Some(match name {
        "date" => date(),
        "time" => time(),
        "date-time" => Expr::sequence([date(), Expr::literal("T"), time()]),
        "uuid" => Expr::sequence([
            hex().repeat(8, Some(8)),
            Expr::literal("-"),
            hex().repeat(4, Some(4)),
            Expr::literal("-"),
            hex().repeat(4, Some(4)),
            Expr::literal("-"),
            hex().repeat(4, Some(4)),
            Expr::literal("-"),
            hex().repeat(12, Some(12)),
        ]),
        _ => return None,
    })
}
