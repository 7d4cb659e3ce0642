import { Message } from '@ctx/core';

/** `levels` objects nested in one another, `{ a: { a: ... { a: 1 } } }` (levels 0: just 1). */
export function nested(levels: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < levels; i++) value = { a: value };
  return value;
}

/**
 * Messages that `Message.parse` may let through but that are not plain JSON, so `JSON.stringify`
 * would store something else (NaN becomes null, a Map {}, undefined disappears): a name, the
 * message, and the path below the message where the refusal must point.
 */
export function nonJsonMessages(): [name: string, message: Message, path: string][] {
  const cycle: Record<string, unknown> = {};
  cycle.self = cycle;
  const base = (id: string) => Message.user('hi', { id });
  return [
    ['NaN in an extra field', { ...base('nan'), extra: Number.NaN } as Message, '.extra'],
    ['Infinity in metadata', { ...base('inf'), metadata: { score: Number.POSITIVE_INFINITY } }, '.metadata.score'],
    [
      'a Map in a content part',
      { ...base('map'), contents: [{ type: 'text', text: 'x', style: new Map() } as never] },
      '.contents[0].style',
    ],
    ['a Date in metadata', { ...base('date'), metadata: { at: new Date(0) } as never }, '.metadata.at'],
    ['undefined in an array', { ...base('undef'), metadata: { list: [1, undefined] } as never }, '.metadata.list[1]'],
    ['a bigint', { ...base('bigint'), metadata: { n: 1n } as never }, '.metadata.n'],
    ['a cycle', { ...base('cycle'), metadata: { c: cycle } as never }, '.metadata.c.self'],
    ['200 levels of nesting', { ...base('deep'), metadata: nested(200) as never }, '.metadata'],
  ];
}
