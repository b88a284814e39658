// Type definitions of grail-gbnf (written by hand; the addon's generated definitions are
// native.d.ts after a build).

/** The types of next-character rules: the `gbnf` package's, and Grail's `token`. */
export declare enum RuleType {
  CHAR = 'char',
  CHAR_EXCLUDE = 'char_exclude',
  END = 'end',
  TOKEN = 'token',
}

/** An inclusive range of code points. */
export type Range = [number, number]

/** Characters that may come next: code points and ranges. */
export interface RuleChar {
  type: RuleType.CHAR
  value: (number | Range)[]
}

/** Any character except these may come next. */
export interface RuleCharExclude {
  type: RuleType.CHAR_EXCLUDE
  value: (number | Range)[]
}

/** The input may end here. */
export interface RuleEnd {
  type: RuleType.END
}

/** Tokens (by id) that may come next: grammars with `<[id]>` or `<think>` only. */
export interface RuleToken {
  type: RuleType.TOKEN
  value: number[]
  /** True when any token except these may come next. */
  negated: boolean
}

/** A next-character rule. */
export type Rule = RuleChar | RuleCharExclude | RuleEnd | RuleToken

/** What `add` takes: text, one code point, or code points. */
export type ValidInput = string | number | number[]

/** True when a rule's value item is a range. */
export declare function isRange(value?: unknown): value is Range

/** Where a GBNF diagnostic is (byte offsets; 1-based line and column in characters). */
export interface Span {
  start: number
  end: number
  line: number
  column: number
}

/** One of Grail's diagnostics. */
export interface Diagnostic {
  severity: 'error' | 'warning' | 'note'
  /** A stable kebab-case identifier, such as `rule-undefined`. */
  code: string
  message: string
  help?: string | null
  /** GBNF: 1-based line of the span's start. */
  line?: number
  /** GBNF: 1-based column of the span's start, in characters. */
  column?: number
  /** GBNF: where in the grammar. */
  span?: Span
  /** Schemas and tools: the JSON pointer. */
  pointer?: string
  /** Schemas and tools: the schema keyword. */
  keyword?: string
  /** Tools: the tool's name. */
  tool?: string
}

/** The base class of Grail's errors. */
export declare class GrailError extends Error {
  diagnostics: Diagnostic[]
}

/** A grammar that does not parse or check. */
export declare class GrammarParseError extends GrailError {
  /** The grammar text. */
  grammar: string
  /** The string index where the first error starts. */
  pos: number
  /** The first error's message. */
  reason: string
}
export { GrammarParseError as GrammarError }

/** Input the grammar does not allow. */
export declare class InputParseError extends GrailError {
  /** The text given to the `add` (or `GBNF`) that failed. */
  mostRecentInput: ValidInput
  /** The string index in `mostRecentInput` of the first character refused. */
  pos: number
  /** The input before it. */
  previousInput: ValidInput
  /** What could have come at `pos`, in GBNF spelling. */
  expected: string
  /** 1-based line of the refused character in all the input. */
  line: number
  /** 1-based column of the refused character, in characters. */
  column: number
  /** All the input, the refused text included. */
  readonly src: string
  /** The message with only the most recent input shown. */
  readonly errorForMostRecentInput: string
  /** The message. */
  readonly messageExpanded: string
}

/** A JSON Schema Grail refuses. */
export declare class SchemaError extends GrailError {}

/** A tool registry Grail refuses. */
export declare class ToolsError extends GrailError {}

/** Options of a GBNF grammar. */
export interface GbnfOptions {
  /** The start rule (default `root`). */
  root?: string
  /**
   * `grail` (default: what Grail's engine runs, a superset of llama.cpp's grammars) or
   * `llama.cpp` (refuse exactly what llama.cpp refuses).
   */
  target?: 'grail' | 'llama.cpp'
  /** Resolves tokens written as text (`<think>`). */
  vocabulary?: Vocabulary
}

/** How a JSON Schema becomes a grammar. */
export interface JsonSchemaOptions {
  /** Weaken keywords Grail cannot enforce exactly instead of refusing the schema. */
  lenient?: boolean
  /** `llama` (the default), `none`, `free`, or at most this many characters. */
  whitespace?: 'llama' | 'none' | 'free' | number
  keyOrder?: 'schema' | 'any'
  /** What objects without `additionalProperties` allow (default true). */
  additionalProperties?: boolean
  /** Read the schema as llama.cpp's converter does. */
  llamaDialect?: boolean
  itemSeparator?: string
  keySeparator?: string
  /** Any JSON below this nesting level. */
  depthCap?: number
}

/** How tool calls are framed and chosen. */
export interface ToolsOptions {
  wire?: 'openai' | 'tool-args' | 'hermes' | 'llama3' | 'mistral'
  /** `auto` (default), `required`, `none`, or a tool's name. */
  choice?: string
  /** Several calls: true for no maximum, a number for at most that many. */
  parallel?: boolean | number
  think?: 'optional' | 'required' | 'forced'
}

/** A grammar compiled for Grail's engine. Immutable; share it. */
export declare class Grammar {
  private constructor()
  /** From GBNF text (llama.cpp's dialect). Throws `GrammarParseError`. */
  static fromGbnf(text: string, options?: GbnfOptions): Grammar
  /** From a JSON Schema (an object or JSON text). Throws `SchemaError`. */
  static fromJsonSchema(schema: object | string, options?: JsonSchemaOptions): Grammar
  /** The tool-call grammar of a tool registry. Throws `ToolsError`. */
  static fromTools(tools: object | string, options?: ToolsOptions): Grammar
  /** The grammar as GBNF text. */
  readonly gbnf: string
  toString(): string
}

/**
 * A model's vocabulary (exact token bytes), for token masks. The first one loaded in a
 * process makes `GRAIL_PREFAULT_MIB` MiB of heap resident (32 when unset, none with 0)
 * and keeps freed memory resident, so the first masks do not page-fault.
 */
export declare class Vocabulary {
  private constructor()
  /** Reads `tokenizer.json`, a `.gguf` file or Grail's `vocab.json`. */
  static fromFile(path: string): Vocabulary
  /** Reads the text of a `tokenizer.json`. */
  static fromTokenizerJson(text: string, name?: string): Vocabulary
  /** Token i is `tokens[i]` (text or bytes). */
  static fromTokens(
    tokens: (string | Uint8Array)[],
    options?: { special?: number[]; eosTokenIds?: number[]; name?: string }
  ): Vocabulary
  /** The number of tokens. */
  readonly size: number
  /** The tokens that end generation. */
  readonly eosTokenIds: number[]
  readonly name: string
  tokenBytes(id: number): Buffer
  isSpecial(id: number): boolean
}

/** Where text stopped matching (`Matcher.add`). */
export interface InputFailure {
  /** The string index of the first refused character. */
  pos: number
  /** The same as a UTF-8 byte offset. */
  offset: number
  /** What could have come there. */
  expected: string
}

/** A mutable parse state over a grammar (and a vocabulary, for tokens and masks). */
/** Options of `new Matcher`. */
export interface MatcherOptions {
  /** Keep history to roll back only the last this many tokens (default: all). */
  maxRollbackTokens?: number | null
}

export declare class Matcher {
  constructor(grammar: Grammar, vocabulary?: Vocabulary | null, options?: MatcherOptions | null)
  /** The most tokens `rollback` can undo (null: all). */
  readonly maxRollbackTokens: number | null
  /** Keeps at most `steps` bytes of history (null: all). */
  setHistoryLimit(steps?: number | null): void
  /** A new matcher after `text`, or where it stopped matching; this one is unchanged. */
  add(text: string): Matcher | InputFailure
  /** Accepts text: false (state unchanged) when the grammar refuses it. */
  acceptText(text: string): boolean
  /** Accepts a token: false (state unchanged) when the grammar refuses it. */
  acceptToken(tokenId: number): boolean
  /** Accepts tokens, all or nothing. */
  acceptTokens(tokenIds: number[]): boolean
  /** How many of `tokenIds`, from the first, the grammar accepts in a row; the matcher does not move. */
  validateTokens(tokenIds: number[]): number
  /**
   * The masks along a draft: row `i` of `out` (rows of `ceil(vocabularySize / 32)` words)
   * gets the tokens allowed after `draft.slice(0, i)`, until a token is refused or the
   * draft ends. Returns how many rows were filled; the matcher does not move.
   */
  fillDraftMasks(draft: number[], out: Uint32Array): number
  /** Undoes the last `tokens` tokens (default 1); throws past the tokens kept. */
  rollback(tokens?: number): void
  reset(): void
  /** True when the input so far is a complete match. */
  isAccepting(): boolean
  /** True when the input so far can still be completed. */
  isViable(): boolean
  /** True when nothing more may be accepted. */
  isTerminated(): boolean
  /** What may come next, in the `gbnf` package's shapes. */
  nextRules(): Rule[]
  /** The text the grammar forces next (at most `maxChars`, default 256). */
  forced(maxChars?: number): string
  /** The bytes the grammar forces next, up to a choice (at most `maxBytes`, default 256). */
  jumpForwardBytes(maxBytes?: number): Buffer
  /**
   * The tokens a decoder may append without sampling (docs/jump-forward.md); `tokenize`
   * gives the ids of exactly the bytes it is handed, or null. The matcher does not move.
   */
  jumpForwardTokens(tokenize: (bytes: Buffer) => number[] | null, maxBytes?: number): number[]
  /** Bytes of text accepted. */
  readonly offset: number
  /** Writes the allowed tokens into row `row` of `bitmask` (bit t%32 of word t/32). */
  fillNextTokenBitmask(bitmask: Uint32Array, row?: number): void
  /** The allowed tokens, sorted. */
  allowedTokens(): number[]
  isTokenAllowed(tokenId: number): boolean
  /** An independent copy. */
  fork(): Matcher
  /** Accepts text all or nothing: null, or where it stopped (this matcher unchanged). */
  advance(text: string): InputFailure | null
  /** `advance`, then the number of the rule list that follows (-1: refused). */
  step(text: string): number
  /** `step` for one character given by its code point. */
  stepChar(codePoint: number): number
  /** The number of the current rule list (4294967295: not numbered). */
  rulesNumberNow(): number
  /** The rules of list `number`. */
  rulesOfNumber(number: number): Rule[]
  /** Bytes that can be rolled back. */
  readonly historyLength: number
  /** A copy as it was after `offset` bytes of text (within the history kept). */
  forkAt(offset: number): Matcher
}

/** An immutable parse state (the `gbnf` package's); calling it is `add`. */
export interface ParseState extends Iterable<Rule> {
  (input: ValidInput): ParseState
  /** The rules of what may come next. */
  rules(): IterableIterator<Rule>
  [Symbol.iterator](): IterableIterator<Rule>
  /** A new state after `input`; throws `InputParseError`. */
  add(input: ValidInput): ParseState
  /** The number of rules. */
  readonly size: number
  /** The grammar as GBNF text. */
  readonly grammar: string
  /** The input so far. */
  readonly input: string
  /** True when the input so far is a complete match. */
  readonly complete: boolean
  /** False only for a grammar that matches nothing. */
  readonly viable: boolean
  /** The text the grammar forces next. */
  forced(maxChars?: number): string
  /** Writes the tokens allowed next into row `row` of `bitmask` (needs a vocabulary). */
  fillTokenBitmask(bitmask: Uint32Array, row?: number): void
  /** The tokens allowed next (needs a vocabulary). */
  allowedTokens(): number[]
  /** A mutable native matcher at this state (a copy). */
  matcher(): Matcher
}
export declare const ParseState: {
  prototype: ParseState
  [Symbol.hasInstance](value: unknown): value is ParseState
}

/** Options of `GBNF`. */
export interface StateOptions {
  /** The start rule (default `root`). */
  root?: string
  /** `grail` (default) or `llama.cpp`: see `GbnfOptions.target`. */
  target?: 'grail' | 'llama.cpp'
  /** Lets the state fill token masks. */
  vocabulary?: Vocabulary
}

/**
 * An immutable state over `grammar` (GBNF text or a `Grammar`) after `initial`. Throws
 * `GrammarParseError` or `InputParseError`.
 */
export declare function GBNF(
  grammar: string | Grammar | { toString(): string },
  initial?: ValidInput,
  options?: StateOptions
): ParseState
export default GBNF

/** True when `text` is a complete match of `grammar`. */
export declare function matches(grammar: string | Grammar, text: string, options?: GbnfOptions): boolean
/** True when `text` can still be completed into a match of `grammar`. */
export declare function viable(grammar: string | Grammar, text: string, options?: GbnfOptions): boolean
/** The text `grammar` forces after `text`; null when `text` is not viable. */
export declare function forced(
  grammar: string | Grammar,
  text?: string,
  options?: GbnfOptions & { maxChars?: number }
): string | null

/** The diagnostics of `grail check`. */
export declare function check(
  text: string,
  options?: { root?: string; target?: 'grail' | 'llama.cpp'; vocabulary?: Vocabulary }
): { ok: boolean; diagnostics: Diagnostic[] }

/** A bitmask of `rows` rows over `vocabularySize` tokens. */
export declare function allocateTokenBitmask(vocabularySize: number, rows?: number): Uint32Array
/** The token ids set in row `row` of a bitmask. */
export declare function bitmaskIds(bitmask: Uint32Array, vocabularySize: number, row?: number): number[]
/**
 * The tokens allowed next of each matcher, into row `rows[i]` (row `i` without `rows`) of
 * `bitmask`, computed on threads: the same rows as `fillNextTokenBitmask` on each matcher.
 * Each matcher and each row may appear once.
 */
export declare function fillNextTokenBitmasks(matchers: Matcher[], bitmask: Uint32Array, rows?: number[]): void

/** One fault of an invalid tool-call output. */
export interface CallFault {
  code: string
  tool?: string
  pointer?: string
  message: string
}

/** Checks a model's output against a tool registry. */
export declare function validateCall(
  tools: object | string,
  output: string,
  options?: ToolsOptions
):
  | {
      valid: true
      toolCalls: { id?: string; type: 'function'; function: { name: string; arguments: string } }[]
      content?: string
      reasoning?: string
    }
  | { valid: false; feedback: string; faults: CallFault[] }

/** The addon's version. */
export declare const version: string
