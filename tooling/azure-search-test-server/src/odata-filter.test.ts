import { describe, expect, it } from 'vitest';
import type { FieldDefinition } from './index-definition.js';
import { parseFilter } from './odata-filter.js';
import type { JsonObject } from './types.js';

const field = (name: string, type: string, extra: Partial<FieldDefinition> = {}): FieldDefinition => ({
  name,
  type,
  key: false,
  retrievable: true,
  searchable: false,
  filterable: true,
  sortable: true,
  facetable: true,
  ...extra,
});
const FIELDS: FieldDefinition[] = [
  field('id', 'Edm.String', { key: true }),
  field('tenantId', 'Edm.String'),
  field('rating', 'Edm.Int32'),
  field('price', 'Edm.Double'),
  field('published', 'Edm.Boolean'),
  field('updated', 'Edm.DateTimeOffset'),
  field('tags', 'Collection(Edm.String)'),
  field('content', 'Edm.String', { filterable: false, searchable: true }),
  field('address', 'Edm.ComplexType', { fields: [field('city', 'Edm.String')] }),
];
const lookup = (path: readonly string[]) => {
  let list: FieldDefinition[] | undefined = FIELDS;
  let found: FieldDefinition | undefined;
  for (const s of path) {
    found = list?.find((f) => f.name === s);
    list = found?.fields;
  }
  return found;
};
const DOCS: JsonObject[] = [
  {
    id: 'a',
    tenantId: 'acme',
    rating: 5,
    price: 10.5,
    published: true,
    updated: '2024-01-10T00:00:00Z',
    tags: ['red', 'big'],
    address: { city: 'Oslo' },
  },
  {
    id: 'b',
    tenantId: "o'brien",
    rating: 3,
    price: 99,
    published: false,
    updated: '2023-06-01T00:00:00Z',
    tags: ['blue'],
    address: { city: 'Bergen' },
  },
  { id: 'c', tenantId: 'globex', rating: null, price: null, published: null, updated: null, tags: [], address: null },
];
const ids = (filter: string) => DOCS.filter(parseFilter(filter, lookup)).map((d) => d.id);

describe('parseFilter: evaluation', () => {
  it('compares with eq, ne, gt, lt, ge, le (null never orders)', () => {
    expect(ids(`tenantId eq 'acme'`)).toEqual(['a']);
    expect(ids(`tenantId ne 'acme'`)).toEqual(['b', 'c']);
    expect(ids('rating gt 3')).toEqual(['a']);
    expect(ids('rating ge 3')).toEqual(['a', 'b']);
    expect(ids('rating lt 5')).toEqual(['b']);
    expect(ids('price le 10.5')).toEqual(['a']);
    expect(ids('rating eq null')).toEqual(['c']);
    expect(ids('rating ne null')).toEqual(['a', 'b']);
    expect(ids('updated gt 2024-01-01T00:00:00Z')).toEqual(['a']);
    expect(ids('5 eq rating')).toEqual(['a']);
  });

  it('combines with and, or, not and parentheses; and binds tighter than or', () => {
    expect(ids(`tenantId eq 'acme' or tenantId eq 'globex' and rating eq 5`)).toEqual(['a']);
    expect(ids(`(tenantId eq 'acme' or tenantId eq 'globex') and rating eq null`)).toEqual(['c']);
    expect(ids(`not (tenantId eq 'acme')`)).toEqual(['b', 'c']);
    expect(ids('published')).toEqual(['a']);
    expect(ids('not published')).toEqual(['b', 'c']);
    expect(ids('true')).toEqual(['a', 'b', 'c']);
    expect(ids('false')).toEqual([]);
  });

  it("unescapes '' inside string literals, so a quote can never end the literal early", () => {
    expect(ids(`tenantId eq 'o''brien'`)).toEqual(['b']);
    // A hostile value, escaped: it is one literal that matches nothing.
    expect(ids(`tenantId eq 'acme'' or tenantId ne ''x'`)).toEqual([]);
  });

  it('search.in with the default delimiters (space and comma) and with given ones', () => {
    expect(ids(`search.in(tenantId, 'acme,globex')`)).toEqual(['a', 'c']);
    expect(ids(`search.in(tenantId, 'acme globex')`)).toEqual(['a', 'c']);
    expect(ids(`search.in(tenantId, 'o''brien|nobody', '|')`)).toEqual(['b']);
    expect(ids(`search.in(tenantId, 'acme globex', '|')`)).toEqual([]);
  });

  it('any and all over collections, with range variables; complex paths', () => {
    expect(ids(`tags/any(t: t eq 'blue')`)).toEqual(['b']);
    expect(ids(`tags/any(t: search.in(t, 'red|blue', '|'))`)).toEqual(['a', 'b']);
    expect(ids('tags/any()')).toEqual(['a', 'b']);
    expect(ids(`tags/all(t: t ne 'blue')`)).toEqual(['a', 'c']);
    expect(ids(`address/city eq 'Oslo'`)).toEqual(['a']);
  });
});

describe('parseFilter: errors worded like the service', () => {
  const error = (filter: string) => {
    try {
      parseFilter(filter, lookup);
    } catch (e) {
      return e as { status: number; message: string };
    }
    throw new Error(`no error for ${filter}`);
  };

  it('syntax errors name the position and the filter', () => {
    const e = error(`tenantId eq 'a' tenantId eq 'b'`);
    expect(e.status).toBe(400);
    expect(e.message).toBe(
      `Invalid expression: Syntax error at position 16 in 'tenantId eq 'a' tenantId eq 'b''.\r\nParameter name: $filter`,
    );
    // An unescaped quote in a value breaks the syntax instead of widening the filter.
    expect(error(`tenantId eq 'a' or 'x' eq 'x''`).message).toMatch(/unterminated string literal/);
    expect(error(`tenantId eq`).message).toMatch(/Syntax error at position 11/);
    expect(error(`tenantId EQ 'a'`).message).toMatch(/Syntax error/);
  });

  it('unknown, non-filterable and wrongly typed fields', () => {
    expect(error(`nope eq 1`).message).toMatch(/^Invalid expression: Could not find a property named 'nope' on type 'search.document'\./);
    expect(error(`content eq 'x'`).message).toMatch(/'content' is not a filterable field/);
    expect(error(`tenantId eq 5`).message).toMatch(/incompatible types.*'Edm.String' and 'Edm.Int32'/);
    expect(error(`tags eq 'red'`).message).toMatch(/incompatible types/);
    expect(error(`not rating gt 3`).message).toMatch(/unary operator 'Not'/);
    expect(error(`rating`).message).toMatch(/must be of type 'Edm.Boolean'/);
    expect(error(`search.in(rating, '1,2')`).message).toMatch(/must be of type 'Edm.String'/);
    expect(error(`search.ismatch('x')`).message).toMatch(/not supported by the test server/);
  });
});
