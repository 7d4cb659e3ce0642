import { invalidParameter, type SearchServiceError } from './errors.js';
import type { FieldDefinition } from './index-definition.js';
import type { JsonObject, JsonValue } from './types.js';

/**
 * The OData `$filter` language of Azure AI Search, the subset the service documents for filters:
 * `eq ne gt lt ge le`, `and or not`, parentheses, literals (strings with `''` escapes, numbers,
 * `true`/`false`/`null`, unquoted DateTimeOffset), field paths (`a/b`), boolean fields and
 * literals as predicates, `search.in(field, 'values'[, 'delimiters'])`, and the lambdas
 * `collection/any()`, `collection/any(x: ...)`, `collection/all(x: ...)`.
 *
 * Checked like the service: unknown fields, fields that are not filterable, comparisons of
 * incompatible types and syntax errors are 400s worded like the service's ("Invalid expression: ...
 * \r\nParameter name: $filter"). Precedence, highest first: `not`, comparisons, `and`, `or`; `not`
 * applies to the primary that follows it (so `not Rating gt 5` is a type error, as on the
 * service: write `not (Rating gt 5)`).
 */
export type Predicate = (document: JsonObject) => boolean;

/** Looks up a field by its path segments (`['address', 'city']`), or undefined. */
export type FieldLookup = (path: readonly string[]) => FieldDefinition | undefined;

type Token =
  | { kind: 'string'; value: string; pos: number }
  | { kind: 'number'; value: number; text: string; pos: number }
  | { kind: 'datetime'; value: number; pos: number }
  | { kind: 'ident'; value: string; pos: number }
  | { kind: 'punct'; value: '(' | ')' | ',' | ':' | '/'; pos: number }
  | { kind: 'end'; pos: number };

/** The static type of an expression: an EDM primitive, a collection, or `null` for the null literal. */
type ExprType = { edm: string; collection: boolean } | null;

interface Expr {
  type: ExprType;
  /** Evaluates against a document and the range variables in scope. */
  eval: (document: JsonObject, scope: Map<string, JsonValue>) => JsonValue;
  /** For error messages: a field path, or undefined for literals. */
  field?: string;
}

const COMPARISON: Record<string, string> = {
  eq: 'Equal',
  ne: 'NotEqual',
  gt: 'GreaterThan',
  lt: 'LessThan',
  ge: 'GreaterThanOrEqual',
  le: 'LessThanOrEqual',
};
const NUMERIC = new Set(['Edm.Int32', 'Edm.Int64', 'Edm.Double', 'Edm.Single', 'Edm.Half', 'Edm.Int16', 'Edm.SByte', 'Edm.Byte']);
const DATETIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,7})?)?(?:Z|[+-]\d{2}:\d{2})/;
const NUMBER = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/;
const IDENT = /^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*/;

/**
 * Parses and checks `$filter` against the index's fields.
 * @throws SearchServiceError (400) worded like the service.
 */
export function parseFilter(text: string, lookup: FieldLookup): Predicate {
  const parser = new Parser(text, lookup);
  const expr = parser.parseExpression();
  parser.expectEnd();
  if (!isBoolean(expr.type)) throw parser.invalid(`The $filter expression must be of type 'Edm.Boolean'.`);
  return (document) => expr.eval(document, new Map()) === true;
}

function isBoolean(type: ExprType): boolean {
  return type !== null && !type.collection && type.edm === 'Edm.Boolean';
}

function typeName(type: ExprType): string {
  if (type === null) return 'null';
  return type.collection ? `Collection(${type.edm})` : type.edm;
}

class Parser {
  readonly #text: string;
  readonly #lookup: FieldLookup;
  readonly #tokens: Token[];
  #index = 0;
  /** Range variables of the lambdas being parsed, with their element types. */
  readonly #ranges = new Map<string, ExprType>();

  constructor(text: string, lookup: FieldLookup) {
    this.#text = text;
    this.#lookup = lookup;
    this.#tokens = this.#lex();
  }

  invalid(message: string): SearchServiceError {
    return invalidParameter('$filter', `Invalid expression: ${message}`);
  }

  #syntaxError(pos: number): SearchServiceError {
    return this.invalid(`Syntax error at position ${pos} in '${this.#text}'.`);
  }

  #lex(): Token[] {
    const text = this.#text;
    const tokens: Token[] = [];
    let i = 0;
    while (i < text.length) {
      const ch = text[i]!;
      if (/\s/.test(ch)) {
        i++;
        continue;
      }
      if (ch === '(' || ch === ')' || ch === ',' || ch === ':' || ch === '/') {
        tokens.push({ kind: 'punct', value: ch, pos: i });
        i++;
        continue;
      }
      if (ch === "'") {
        const start = i;
        let value = '';
        i++;
        for (;;) {
          if (i >= text.length) throw this.invalid(`There is an unterminated string literal at position ${start} in '${text}'.`);
          if (text[i] === "'") {
            if (text[i + 1] === "'") {
              value += "'";
              i += 2;
              continue;
            }
            i++;
            break;
          }
          value += text[i];
          i++;
        }
        tokens.push({ kind: 'string', value, pos: start });
        continue;
      }
      const rest = text.slice(i);
      const datetime = DATETIME.exec(rest);
      if (datetime) {
        const value = Date.parse(datetime[0]);
        if (Number.isNaN(value)) throw this.#syntaxError(i);
        tokens.push({ kind: 'datetime', value, pos: i });
        i += datetime[0].length;
        continue;
      }
      const number = NUMBER.exec(rest);
      if (number && (ch !== '-' || /\d|\./.test(text[i + 1] ?? ''))) {
        tokens.push({ kind: 'number', value: Number(number[0]), text: number[0], pos: i });
        i += number[0].length;
        continue;
      }
      const ident = IDENT.exec(rest);
      if (ident) {
        tokens.push({ kind: 'ident', value: ident[0], pos: i });
        i += ident[0].length;
        continue;
      }
      throw this.#syntaxError(i);
    }
    tokens.push({ kind: 'end', pos: text.length });
    return tokens;
  }

  #peek(offset = 0): Token {
    return this.#tokens[Math.min(this.#index + offset, this.#tokens.length - 1)]!;
  }

  #next(): Token {
    const token = this.#peek();
    if (this.#index < this.#tokens.length - 1) this.#index++;
    return token;
  }

  #isWord(token: Token, word: string): boolean {
    return token.kind === 'ident' && token.value === word;
  }

  #isPunct(token: Token, value: string): boolean {
    return token.kind === 'punct' && token.value === value;
  }

  #expectPunct(value: string): void {
    const token = this.#next();
    if (!this.#isPunct(token, value)) throw this.#syntaxError(token.pos);
  }

  expectEnd(): void {
    const token = this.#peek();
    if (token.kind !== 'end') throw this.#syntaxError(token.pos);
  }

  parseExpression(): Expr {
    let left = this.#parseAnd();
    while (this.#isWord(this.#peek(), 'or')) {
      const op = this.#next();
      const right = this.#parseAnd();
      this.#requireBoolean(left, 'Or', op.pos);
      this.#requireBoolean(right, 'Or', op.pos);
      const [l, r] = [left, right];
      left = { type: BOOLEAN, eval: (d, s) => l.eval(d, s) === true || r.eval(d, s) === true };
    }
    return left;
  }

  #parseAnd(): Expr {
    let left = this.#parseComparison();
    while (this.#isWord(this.#peek(), 'and')) {
      const op = this.#next();
      const right = this.#parseComparison();
      this.#requireBoolean(left, 'And', op.pos);
      this.#requireBoolean(right, 'And', op.pos);
      const [l, r] = [left, right];
      left = { type: BOOLEAN, eval: (d, s) => l.eval(d, s) === true && r.eval(d, s) === true };
    }
    return left;
  }

  #requireBoolean(expr: Expr, kind: string, pos: number): void {
    if (!isBoolean(expr.type)) {
      throw this.invalid(
        `A binary operator with incompatible types was detected. Found operand types '${typeName(expr.type)}' and 'Edm.Boolean' for operator kind '${kind}' at position ${pos}.`,
      );
    }
  }

  #parseComparison(): Expr {
    const left = this.#parseUnary();
    const token = this.#peek();
    if (token.kind !== 'ident' || !(token.value in COMPARISON)) return left;
    this.#next();
    const right = this.#parseUnary();
    return this.#comparison(token.value, left, right, token.pos);
  }

  #parseUnary(): Expr {
    const token = this.#peek();
    if (this.#isWord(token, 'not')) {
      this.#next();
      const operand = this.#parseUnary();
      if (!isBoolean(operand.type)) {
        throw this.invalid(
          `The operand for a unary operator 'Not' is of type '${typeName(operand.type)}', which is not compatible: 'Edm.Boolean' is expected.`,
        );
      }
      return { type: BOOLEAN, eval: (d, s) => operand.eval(d, s) !== true };
    }
    return this.#parsePrimary();
  }

  #parsePrimary(): Expr {
    const token = this.#next();
    switch (token.kind) {
      case 'punct': {
        if (token.value !== '(') throw this.#syntaxError(token.pos);
        const inner = this.parseExpression();
        this.#expectPunct(')');
        return inner;
      }
      case 'string':
        return literal({ edm: 'Edm.String', collection: false }, token.value);
      case 'number':
        return literal({ edm: /[.eE]/.test(token.text) ? 'Edm.Double' : 'Edm.Int32', collection: false }, token.value);
      case 'datetime':
        return literal({ edm: 'Edm.DateTimeOffset', collection: false }, token.value);
      case 'end':
        throw this.#syntaxError(token.pos);
      case 'ident':
        return this.#identifier(token);
    }
  }

  #identifier(token: Extract<Token, { kind: 'ident' }>): Expr {
    const word = token.value;
    if (word === 'true' || word === 'false') return literal(BOOLEAN, word === 'true');
    if (word === 'null') return { type: null, eval: () => null };
    if (word.includes('.')) return this.#functionCall(token);
    if (this.#isPunct(this.#peek(), '(')) throw this.invalid(`Unknown function '${word}' at position ${token.pos}.`);
    return this.#path(token);
  }

  /** `a`, `a/b`, `x` (a range variable), `a/any(...)`, `a/all(...)`. */
  #path(first: Extract<Token, { kind: 'ident' }>): Expr {
    const segments = [first.value];
    const range = this.#ranges.get(first.value);
    while (this.#isPunct(this.#peek(), '/')) {
      const slash = this.#next();
      const part = this.#next();
      if (part.kind !== 'ident') throw this.#syntaxError(part.pos);
      if ((part.value === 'any' || part.value === 'all') && this.#isPunct(this.#peek(), '(')) {
        return this.#lambda(segments, range !== undefined, part.value, slash.pos);
      }
      segments.push(part.value);
    }
    if (range !== undefined && segments.length === 1) {
      const name = first.value;
      return { type: range, eval: (_d, scope) => scope.get(name) ?? null, field: name };
    }
    if (range !== undefined) throw this.invalid(`Complex range variables are not supported by the test server ('${segments.join('/')}').`);
    const field = this.#field(segments);
    return { type: fieldType(field), eval: (d) => valueAt(d, segments), field: segments.join('/') };
  }

  #field(segments: readonly string[]): FieldDefinition {
    const field = this.#lookup(segments);
    if (!field) throw this.invalid(`Could not find a property named '${segments.at(-1)}' on type 'search.document'.`);
    if (field.type !== 'Edm.ComplexType' && field.type !== 'Collection(Edm.ComplexType)' && !field.filterable) {
      throw this.invalid(`'${segments.join('/')}' is not a filterable field. Only filterable fields can be used in filter expressions.`);
    }
    return field;
  }

  #lambda(segments: string[], fromRange: boolean, kind: 'any' | 'all', pos: number): Expr {
    if (fromRange) throw this.invalid(`Lambda expressions over range variables are not supported by the test server.`);
    const field = this.#field(segments);
    const type = fieldType(field);
    if (!type?.collection)
      throw this.invalid(
        `The '${kind}' operator at position ${pos} can only be applied to collection fields; '${segments.join('/')}' is of type '${typeName(type)}'.`,
      );
    this.#expectPunct('(');
    const element: ExprType = { edm: type.edm, collection: false };
    if (this.#isPunct(this.#peek(), ')')) {
      this.#next();
      if (kind === 'all') throw this.invalid(`The 'all' operator needs a lambda expression.`);
      return { type: BOOLEAN, eval: (d) => (asArray(valueAt(d, segments))?.length ?? 0) > 0 };
    }
    const variable = this.#next();
    if (variable.kind !== 'ident' || variable.value.includes('.')) throw this.#syntaxError(variable.pos);
    this.#expectPunct(':');
    const name = variable.value;
    const shadowed = this.#ranges.get(name);
    this.#ranges.set(name, element);
    const body = this.parseExpression();
    if (shadowed === undefined) this.#ranges.delete(name);
    else this.#ranges.set(name, shadowed);
    this.#expectPunct(')');
    if (!isBoolean(body.type)) throw this.invalid(`The body of the '${kind}' lambda must be of type 'Edm.Boolean'.`);
    return {
      type: BOOLEAN,
      eval: (d, scope) => {
        const items = asArray(valueAt(d, segments)) ?? [];
        const test = (item: JsonValue) => {
          const inner = new Map(scope);
          inner.set(name, item);
          return body.eval(d, inner) === true;
        };
        return kind === 'any' ? items.some(test) : items.every(test);
      },
    };
  }

  #functionCall(token: Extract<Token, { kind: 'ident' }>): Expr {
    const name = token.value;
    if (name !== 'search.in') {
      if (/^(search\.ismatch|search\.ismatchscoring|search\.score|geo\.distance|geo\.intersects)$/.test(name)) {
        throw this.invalid(`The function '${name}' is not supported by the test server.`);
      }
      throw this.invalid(`Unknown function '${name}' at position ${token.pos}.`);
    }
    this.#expectPunct('(');
    const target = this.#parseUnary();
    if (target.field === undefined) throw this.invalid(`The first argument of 'search.in' must be a field or a range variable.`);
    if (target.type?.edm !== 'Edm.String' || target.type.collection) {
      throw this.invalid(
        `The first argument of 'search.in' must be of type 'Edm.String'; '${target.field}' is of type '${typeName(target.type)}'.`,
      );
    }
    this.#expectPunct(',');
    const values = this.#next();
    if (values.kind !== 'string') throw this.invalid(`The second argument of 'search.in' must be a string literal.`);
    let delimiters = ' ,';
    if (this.#isPunct(this.#peek(), ',')) {
      this.#next();
      const given = this.#next();
      if (given.kind !== 'string' || given.value === '')
        throw this.invalid(`The third argument of 'search.in' must be a non-empty string literal.`);
      delimiters = given.value;
    }
    this.#expectPunct(')');
    const set = new Set(splitBy(values.value, delimiters).filter((v) => v !== ''));
    return {
      type: BOOLEAN,
      eval: (d, s) => {
        const value = target.eval(d, s);
        return typeof value === 'string' && set.has(value);
      },
    };
  }

  #comparison(op: string, left: Expr, right: Expr, pos: number): Expr {
    const kind = COMPARISON[op]!;
    if (left.type?.collection || right.type?.collection) {
      throw this.invalid(
        `A binary operator with incompatible types was detected. Found operand types '${typeName(left.type)}' and '${typeName(right.type)}' for operator kind '${kind}'.`,
      );
    }
    if (left.type !== null && right.type !== null && !compatible(left.type.edm, right.type.edm)) {
      throw this.invalid(
        `A binary operator with incompatible types was detected. Found operand types '${typeName(left.type)}' and '${typeName(right.type)}' for operator kind '${kind}'.`,
      );
    }
    if (op !== 'eq' && op !== 'ne' && (left.type === null || right.type === null)) {
      throw this.invalid(`The operator '${op}' at position ${pos} cannot be applied to null.`);
    }
    if (op !== 'eq' && op !== 'ne' && (left.type?.edm === 'Edm.Boolean' || left.type?.edm === 'Edm.GeographyPoint')) {
      throw this.invalid(`The operator '${op}' at position ${pos} cannot be applied to operands of type '${typeName(left.type)}'.`);
    }
    const dateLeft = left.type?.edm === 'Edm.DateTimeOffset';
    const dateRight = right.type?.edm === 'Edm.DateTimeOffset';
    const norm = (value: JsonValue, isDate: boolean): JsonValue => (isDate && typeof value === 'string' ? Date.parse(value) : value);
    return {
      type: BOOLEAN,
      eval: (d, s) => {
        const a = norm(left.eval(d, s), dateLeft);
        const b = norm(right.eval(d, s), dateRight);
        switch (op) {
          case 'eq':
            return a === b;
          case 'ne':
            return a !== b;
          default: {
            if (a === null || b === null || (typeof a !== 'number' && typeof a !== 'string') || typeof a !== typeof b) return false;
            const cmp = a < (b as typeof a) ? -1 : a > (b as typeof a) ? 1 : 0;
            return op === 'gt' ? cmp > 0 : op === 'lt' ? cmp < 0 : op === 'ge' ? cmp >= 0 : cmp <= 0;
          }
        }
      },
    };
  }
}

const BOOLEAN: ExprType = { edm: 'Edm.Boolean', collection: false };

function literal(type: ExprType, value: JsonValue): Expr {
  return { type, eval: () => value };
}

function compatible(a: string, b: string): boolean {
  if (a === b) return true;
  return NUMERIC.has(a) && NUMERIC.has(b);
}

function fieldType(field: FieldDefinition): ExprType {
  const match = /^Collection\((.+)\)$/.exec(field.type);
  return match ? { edm: match[1]!, collection: true } : { edm: field.type, collection: false };
}

/** The value at a field path; a path through a complex collection collects the values. */
function valueAt(document: JsonObject, segments: readonly string[]): JsonValue {
  let value: JsonValue = document;
  for (const segment of segments) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
    value = (value as JsonObject)[segment] ?? null;
  }
  return value;
}

function asArray(value: JsonValue): JsonValue[] | undefined {
  return Array.isArray(value) ? value : undefined;
}

function splitBy(text: string, delimiters: string): string[] {
  const out: string[] = [];
  let current = '';
  for (const ch of text) {
    if (delimiters.includes(ch)) {
      out.push(current);
      current = '';
    } else {
      current += ch;
    }
  }
  out.push(current);
  return out;
}
