//! `anyOf` branches that allow some types whole: those types written once, apart.
//!
//! A value's JSON type shows in its first character, so the branches of an `anyOf` may be
//! split by type without changing what they allow. Where one branch allows every value of
//! a type (every string, every array, ...), no other branch can add to that type: the type
//! is taken out of every branch and written once as a branch of its own. Schemas generated
//! from typed structures often have many branches that name no `type` (every value of
//! every type other than object, and one object form each); written per branch, each
//! scalar or array value is matched by as many copies of the same rules as there are
//! branches, and a matcher carries them all.

use crate::shape::{Shape, Typed, Types};

/// The single types of a set, one bit each.
const SINGLE_TYPES: [Types; 7] = [
    Types::NULL,
    Types::BOOLEAN,
    Types::INTEGER,
    Types::NUMBER,
    Types::STRING,
    Types::ARRAY,
    Types::OBJECT,
];

/// The branches of an `anyOf` with the types some branch allows whole written once, as the
/// first branch, and taken out of every other branch (a branch left with no type is
/// dropped). `None` when no type allowed whole by one branch is also allowed by another:
/// then there is nothing to share, and the branches stay as written.
pub fn whole_types_apart(branches: &[Shape]) -> Option<Vec<Shape>> {
    let typed: Vec<&Typed> = branches
        .iter()
        .filter_map(|branch| match branch {
            Shape::Typed(typed) => Some(&**typed),
            _ => None,
        })
        .collect();
    let whole = typed
        .iter()
        .map(|typed| typed.whole_types())
        .fold(Types::NONE, Types::union);
    let shared = SINGLE_TYPES.iter().any(|&single| {
        whole.has(single)
            && typed
                .iter()
                .filter(|typed| !typed.types.intersection(single).is_empty())
                .count()
                >= 2
    });
    if !shared {
        return None;
    }
    let mut apart = Vec::with_capacity(branches.len() + 1);
    apart.push(Shape::typed(Typed::of_types(whole)));
    for branch in branches {
        let Shape::Typed(typed) = branch else {
            apart.push(branch.clone());
            continue;
        };
        let rest = typed.types.not_covered_by(whole);
        if rest == typed.types {
            apart.push(branch.clone());
        } else if !rest.is_empty() {
            let mut narrowed = Typed::clone(typed);
            narrowed.types = rest;
            // Excluded values of the types taken out no longer concern this branch.
            narrowed
                .excluded
                .retain(|excluded| !rest.intersection(Types::of(&excluded.value)).is_empty());
            apart.push(Shape::typed(narrowed));
        }
    }
    Some(apart)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numeric::{Bound, Decimal};
    use crate::shape::Located;

    fn typed(types: Types, edit: impl FnOnce(&mut Typed)) -> Shape {
        let mut typed = Typed::of_types(types);
        edit(&mut typed);
        Shape::typed(typed)
    }

    fn types_of(shape: &Shape) -> Types {
        match shape {
            Shape::Typed(typed) => typed.types,
            other => panic!("not a typed shape: {other:?}"),
        }
    }

    /// Every type but objects (numbers standing for integers too).
    const ALL_BUT_OBJECT: Types = Types(
        Types::NULL.0 | Types::BOOLEAN.0 | Types::NUMBER.0 | Types::STRING.0 | Types::ARRAY.0,
    );

    /// Branches naming no type, each with its own object form (as schemas generated from
    /// Go structures have them): the other types are written once.
    #[test]
    fn typeless_object_branches_share_the_other_types() {
        let object_form = |name: &str| {
            let name = name.to_string();
            typed(Types::ALL, move |typed| {
                typed.object.properties.push((name, Shape::Any));
                typed.object.additional = Shape::Never;
            })
        };
        let branches = [object_form("a"), object_form("b"), object_form("c")];
        let apart = whole_types_apart(&branches).expect("the other types are shared");
        assert_eq!(apart.len(), 4);
        assert_eq!(types_of(&apart[0]), ALL_BUT_OBJECT);
        for (branch, original) in apart[1..].iter().zip(&branches) {
            assert_eq!(types_of(branch), Types::OBJECT);
            let (Shape::Typed(narrowed), Shape::Typed(original)) = (branch, original) else {
                unreachable!()
            };
            assert_eq!(narrowed.object, original.object, "the object form is kept");
        }
    }

    /// Integers whole cover an integer-only branch but not a branch of every number;
    /// numbers whole cover both.
    #[test]
    fn integers_cover_only_integer_branches() {
        let bounded = |types: Types| {
            typed(types, |typed| {
                typed.number.minimum = Some(Located {
                    value: Bound {
                        value: Decimal::from_json(&serde_json::Number::from(3)),
                        exclusive: false,
                    },
                    pointer: String::new(),
                    keyword: "minimum",
                })
            })
        };
        let integers = typed(Types::INTEGER, |_| {});
        let branches = [
            integers,
            bounded(Types::INTEGER.union(Types::STRING)),
            bounded(Types::NUMBER),
        ];
        let apart = whole_types_apart(&branches).expect("integers are shared");
        let types: Vec<Types> = apart.iter().map(types_of).collect();
        // The second branch allows every string, and its bounded integers are covered:
        // nothing of it is left. Non-integers above the bound are not covered.
        assert_eq!(types, [Types::INTEGER.union(Types::STRING), Types::NUMBER]);
        assert_eq!(
            Types::NUMBER
                .union(Types::INTEGER)
                .not_covered_by(Types::NUMBER),
            Types::NONE
        );
    }

    /// A branch that excludes a value of a type does not allow that type whole, and keeps
    /// only the exclusions of the types it still has.
    #[test]
    fn exclusions_keep_a_type_from_being_whole() {
        let excluding = |types: Types, value: serde_json::Value| {
            typed(types, move |typed| {
                typed.excluded.push(Located {
                    value,
                    pointer: String::new(),
                    keyword: "not",
                })
            })
        };
        let branches = [
            excluding(Types::NULL.union(Types::STRING), serde_json::json!("x")),
            excluding(Types::NULL.union(Types::STRING), serde_json::Value::Null),
            typed(Types::NULL.union(Types::BOOLEAN), |_| {}),
        ];
        // The second branch allows every string: the three together allow every null,
        // boolean and string.
        let apart = whole_types_apart(&branches).expect("null is shared");
        assert_eq!(apart.len(), 1);
        assert_eq!(
            types_of(&apart[0]),
            Types::NULL.union(Types::BOOLEAN).union(Types::STRING)
        );
        let long_strings = |typed: &mut Typed| typed.string.min_length = 2;
        let Shape::Typed(second) = &branches[1] else {
            unreachable!()
        };
        let mut second = Typed::clone(second);
        long_strings(&mut second);
        let branches = [
            branches[0].clone(),
            Shape::typed(second),
            branches[2].clone(),
        ];
        let apart = whole_types_apart(&branches).expect("null is shared");
        assert_eq!(types_of(&apart[0]), Types::NULL.union(Types::BOOLEAN));
        let Shape::Typed(first) = &apart[1] else {
            unreachable!()
        };
        assert_eq!(first.types, Types::STRING);
        assert_eq!(first.excluded.len(), 1, "the excluded string stays");
        let Shape::Typed(second) = &apart[2] else {
            unreachable!()
        };
        assert_eq!(second.types, Types::STRING);
        assert!(second.excluded.is_empty(), "the excluded null goes");
        assert_eq!(apart.len(), 3, "the third branch is covered whole");
    }

    /// Branches of types no other branch allows stay as written.
    #[test]
    fn disjoint_branches_stay() {
        let branches = [
            typed(Types::STRING, |_| {}),
            typed(Types::NULL, |_| {}),
            typed(Types::OBJECT, |typed| {
                typed.object.additional = Shape::Never
            }),
        ];
        assert_eq!(whole_types_apart(&branches), None);
    }
}
