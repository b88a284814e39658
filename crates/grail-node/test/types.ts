// Type-checked against index.d.ts by scripts/node_test.sh (tsc --noEmit --strict); not run.
import GBNF, {
  Grammar,
  GrammarParseError,
  InputParseError,
  Matcher,
  RuleType,
  Vocabulary,
  allocateTokenBitmask,
  check,
  fillNextTokenBitmasks,
  forced,
  isRange,
  matches,
  validateCall,
  viable,
  type ParseState,
  type Rule,
} from 'grail-gbnf'

let state: ParseState = GBNF('root ::= "yes" | "no"')
state = state.add('y')
state = state('e')
for (const rule of state) {
  if (rule.type === RuleType.CHAR || rule.type === RuleType.CHAR_EXCLUDE) {
    for (const item of rule.value) {
      const first: number = isRange(item) ? item[0] : item
      String.fromCodePoint(first)
    }
  } else if (rule.type === RuleType.TOKEN) {
    const negated: boolean = rule.negated
    void negated
  }
}
const rules: Rule[] = [...state.rules()]
const size: number = state.size + rules.length
const complete: boolean = state.complete
void size
void complete

try {
  GBNF('root := "foo"')
} catch (error) {
  if (error instanceof GrammarParseError) {
    const pos: number = error.pos
    const code: string = error.diagnostics[0].code
    void pos
    void code
  } else if (error instanceof InputParseError) {
    const expected: string = error.expected
    void expected
  }
}

const grammar: Grammar = Grammar.fromJsonSchema({ type: 'object' }, { whitespace: 0 })
const tools: Grammar = Grammar.fromTools([], { wire: 'hermes', parallel: true })
const vocabulary: Vocabulary = Vocabulary.fromFile('tokenizer.json')
const matcher = new Matcher(grammar, vocabulary)
const bitmask: Uint32Array = allocateTokenBitmask(vocabulary.size)
matcher.fillNextTokenBitmask(bitmask)
fillNextTokenBitmasks([matcher], bitmask, [0])
const drafted: number = matcher.validateTokens([1, 2])
void drafted
const limited = new Matcher(grammar, vocabulary, { maxRollbackTokens: 16 })
const kept: number | null = limited.maxRollbackTokens
void kept
const draftRows: number = limited.fillDraftMasks([1, 2], allocateTokenBitmask(vocabulary.size, 3))
void draftRows
const forcedBytes: Buffer = matcher.jumpForwardBytes(64)
const jumped: number[] = matcher.jumpForwardTokens((bytes: Buffer) => (bytes.length > 0 ? [1] : null), 64)
void forcedBytes
void jumped
const next = matcher.add('{')
if (next instanceof Matcher) {
  next.acceptToken(1)
} else {
  const pos: number = next.pos
  void pos
}
const ok: boolean = matches(grammar, '{}') && viable(tools, '') && check('root ::= "a"').ok
const more: string | null = forced(grammar, '{')
const verdict = validateCall([], 'text')
if (verdict.valid) {
  verdict.toolCalls.map((call) => call.function.name)
} else {
  verdict.faults.map((fault) => fault.code)
}
void ok
void more
GBNF(grammar, '', { vocabulary }).fillTokenBitmask(bitmask)
