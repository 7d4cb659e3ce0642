import { parseFilter, type FieldDefinition } from '@ctx/azure-search-test-server';
import { ConfigurationError } from '@ctx/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { andFilters, odata, odataLiteral, scopeToFilter } from './odata.js';

const field = (name: string, type: string): FieldDefinition => ({
  name,
  type,
  key: false,
  retrievable: true,
  searchable: false,
  filterable: true,
  sortable: false,
  facetable: false,
});
const FIELDS = [field('tenantId', 'Edm.String'), field('groups', 'Collection(Edm.String)'), field('rating', 'Edm.Int32')];
const lookup = (path: readonly string[]) => (path.length === 1 ? FIELDS.find((f) => f.name === path[0]) : undefined);
/** Documents of three tenants; the property below adds the hostile tenant's own document. */
const OTHERS = [
  { tenantId: 'acme', groups: ['staff'] },
  { tenantId: 'globex', groups: ['admins', 'staff'] },
  { tenantId: "o'brien", groups: [] },
];

describe('odataLiteral', () => {
  it('quotes strings with every quote doubled; writes numbers, booleans, null and dates as literals', () => {
    expect(odataLiteral("o'brien")).toBe("'o''brien'");
    expect(odataLiteral("''")).toBe("''''''");
    expect(odataLiteral(4.5)).toBe('4.5');
    expect(odataLiteral(-3)).toBe('-3');
    expect(odataLiteral(true)).toBe('true');
    expect(odataLiteral(null)).toBe('null');
    expect(odataLiteral(new Date('2024-05-01T10:00:00Z'))).toBe('2024-05-01T10:00:00.000Z');
  });

  it('refuses values that are not literals instead of stringifying them', () => {
    for (const bad of [
      Number.NaN,
      Number.POSITIVE_INFINITY,
      ['a'],
      { toString: () => "x' or true or 'x" },
      undefined,
      10n,
      new Date('nope'),
    ]) {
      expect(() => odataLiteral(bad as never)).toThrow(ConfigurationError);
    }
  });
});

describe('odata tagged template', () => {
  it('escapes every placeholder and refuses quoted placeholders', () => {
    const tenant = "acme' or tenantId ne 'x";
    expect(odata`tenantId eq ${tenant} and rating ge ${4}`).toBe("tenantId eq 'acme'' or tenantId ne ''x' and rating ge 4");
    expect(() => odata`tenantId eq '${tenant}'`).toThrow(/wrapped in quotes/);
    expect(() => odata`tenantId eq ${['a'] as never}`).toThrow(ConfigurationError);
  });
});

describe('scopeToFilter', () => {
  it('compiles field conditions: eq, one of (search.in), any of a collection, null, empty lists', () => {
    expect(scopeToFilter({ tenantId: "o'brien" })).toBe("tenantId eq 'o''brien'");
    expect(scopeToFilter({ tenantId: ['acme', 'globex'] })).toBe("search.in(tenantId, 'acme|globex', '|')");
    expect(scopeToFilter({ tenantId: ['a|b', 'c'] })).toBe("search.in(tenantId, 'a|b,c', ',')");
    expect(scopeToFilter({ tenantId: ['', 'c'] })).toBe("(tenantId eq '' or tenantId eq 'c')");
    expect(scopeToFilter({ groups: { any: ['staff', 'admins'] } })).toBe("groups/any(v: search.in(v, 'staff|admins', '|'))");
    expect(scopeToFilter({ tenantId: 'acme', rating: null })).toBe("tenantId eq 'acme' and rating eq null");
    expect(scopeToFilter({ tenantId: [] })).toBe('false');
    expect(scopeToFilter({ groups: { any: [] } })).toBe('false');
    expect(scopeToFilter({})).toBeUndefined();
    expect(scopeToFilter("tenantId eq 'x'")).toBe("tenantId eq 'x'");
  });

  it('refuses field names that could inject syntax', () => {
    for (const name of ["tenantId eq 'a' or true or x", 'a b', '', 'tenant-id', '1abc', 'a/', 'a)']) {
      expect(() => scopeToFilter({ [name]: 'x' })).toThrow(ConfigurationError);
    }
    expect(() => scopeToFilter({ tenantId: { any: 'x' } as never })).toThrow(ConfigurationError);
    expect(() => scopeToFilter(['x'] as never)).toThrow(ConfigurationError);
  });

  it('andFilters parenthesizes each part', () => {
    expect(andFilters("a eq 'x' or b eq 'y'", undefined, 'c eq 1')).toBe("(a eq 'x' or b eq 'y') and (c eq 1)");
    expect(andFilters(undefined, 'c eq 1')).toBe('c eq 1');
    expect(andFilters(undefined, '  ')).toBeUndefined();
  });
});

describe('property: no tenant id can widen its scope (evaluated by the test server parser)', () => {
  const hostile = fc.oneof(
    fc.string(),
    fc.string({ unit: fc.constantFrom("'", '"', ' ', 'o', 'r', '(', ')', '|', ',', 'e', 'q', 'n', 't', '\\', '/') }),
    fc.constantFrom("acme' or tenantId ne 'x", "') or true or ('", "acme'", "''", "x' or '1' eq '1"),
  );

  it('{ tenantId: id } matches exactly the documents whose tenantId is id', () => {
    fc.assert(
      fc.property(hostile, (id) => {
        const docs = [...OTHERS, { tenantId: id, groups: [] }];
        const matches = docs.filter(parseFilter(scopeToFilter({ tenantId: id })!, lookup));
        expect(matches.length).toBeGreaterThan(0);
        expect(matches.every((d) => d.tenantId === id)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('one-of lists and collection scopes match exactly their members', () => {
    fc.assert(
      fc.property(fc.array(hostile, { minLength: 1, maxLength: 4 }), (ids) => {
        const docs = [...OTHERS, ...ids.map((id) => ({ tenantId: id, groups: [id] }))];
        const inList = docs.filter(parseFilter(scopeToFilter({ tenantId: ids })!, lookup));
        expect(inList.every((d) => ids.includes(d.tenantId))).toBe(true);
        expect(inList.length).toBeGreaterThanOrEqual(ids.length);
        const inGroups = docs.filter(parseFilter(scopeToFilter({ groups: { any: ids } })!, lookup));
        expect(inGroups.every((d) => d.groups.some((g) => ids.includes(g)))).toBe(true);
        expect(inGroups.length).toBeGreaterThanOrEqual(ids.length);
      }),
      { numRuns: 300 },
    );
  });
});
