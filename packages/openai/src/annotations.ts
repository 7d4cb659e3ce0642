import type { Annotation, TextContent } from '@ctx/core';

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;
const str = (value: unknown) => (typeof value === 'string' ? value : undefined);
const int = (value: unknown) => (Number.isInteger(value) ? (value as number) : undefined);

/** Copies the defined values of `fields` onto `target`. */
function assign<T extends object>(target: T, fields: Record<string, unknown>): T {
  for (const [key, value] of Object.entries(fields)) if (value !== undefined) (target as Record<string, unknown>)[key] = value;
  return target;
}

/**
 * One annotation as the service sends it, in either API: Responses `url_citation`,
 * `file_citation`, `container_file_citation` and `file_path` (flat), Chat Completions
 * `{ type: 'url_citation', url_citation: {...} }` (nested). `undefined` for kinds ctx does not know.
 */
export function toAnnotation(raw: unknown): Annotation | undefined {
  if (!isObject(raw)) return undefined;
  const fields = isObject(raw.url_citation) ? raw.url_citation : raw;
  const span = { startIndex: int(fields.start_index), endIndex: int(fields.end_index) };
  switch (raw.type) {
    case 'url_citation': {
      const url = str(fields.url);
      return url === undefined ? undefined : assign<Annotation>({ type: 'url-citation', url }, { title: str(fields.title), ...span });
    }
    case 'file_citation':
    case 'container_file_citation':
    case 'file_path': {
      const fileId = str(fields.file_id);
      if (fileId === undefined) return undefined;
      return assign<Annotation>(
        { type: 'file-citation', fileId },
        { filename: str(fields.filename), containerId: str(fields.container_id), index: int(fields.index), ...span },
      );
    }
    default:
      return undefined;
  }
}

/** A text content with the annotations ctx knows (none: no `annotations` field) and an optional phase. */
export function textContent(text: string, annotations: readonly unknown[] | null | undefined, phase?: string | null): TextContent {
  const content: TextContent = { type: 'text', text };
  const known = (annotations ?? []).map(toAnnotation).filter((a): a is Annotation => a !== undefined);
  if (known.length) content.annotations = known;
  const ctxPhase = toPhase(phase);
  if (ctxPhase) content.phase = ctxPhase;
  return content;
}

/** The Responses API's message phase as ctx's. */
export function toPhase(phase: string | null | undefined): TextContent['phase'] {
  return phase === 'commentary' ? 'commentary' : phase === 'final_answer' ? 'final-answer' : undefined;
}

/** ctx's phase as the Responses API's. */
export function fromPhase(phase: TextContent['phase']): 'commentary' | 'final_answer' | undefined {
  return phase === 'final-answer' ? 'final_answer' : phase;
}
