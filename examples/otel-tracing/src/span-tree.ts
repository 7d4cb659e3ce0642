import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';

/** Attributes worth a glance in a terminal, in this order, when a span has them. */
const SHOWN = [
  'gen_ai.provider.name',
  'gen_ai.request.model',
  'gen_ai.tool.call.id',
  'gen_ai.usage.input_tokens',
  'gen_ai.usage.output_tokens',
  'gen_ai.response.finish_reasons',
  'ctx.provider.added.messages',
  'ctx.provider.added.instructions',
  'ctx.provider.added.tools',
  'ctx.context.tokens',
  'error.type',
];

const millis = (t: [number, number]) => t[0] * 1e3 + t[1] / 1e6;

/**
 * The spans as an indented tree, children in start order: name, duration, and the attributes in
 * `SHOWN` each span has. One line per span.
 */
export function formatSpanTree(spans: readonly ReadableSpan[]): string[] {
  const ids = new Set(spans.map((s) => s.spanContext().spanId));
  const children = (parentId: string | undefined) =>
    spans
      .filter((s) => (s.parentSpanContext && ids.has(s.parentSpanContext.spanId) ? s.parentSpanContext.spanId : undefined) === parentId)
      .sort((a, b) => millis(a.startTime) - millis(b.startTime));
  const lines: string[] = [];
  const walk = (span: ReadableSpan, prefix: string, last: boolean, root: boolean) => {
    const branch = root ? '' : last ? '└─ ' : '├─ ';
    const shown = SHOWN.filter((k) => span.attributes[k] !== undefined).map((k) => `${k}=${format(span.attributes[k])}`);
    const duration = `${(millis(span.endTime) - millis(span.startTime)).toFixed(1)} ms`;
    lines.push(
      `${prefix}${branch}${span.name.padEnd(30 - prefix.length - branch.length)} ${duration.padStart(8)}  ${shown.join(' ')}`.trimEnd(),
    );
    const kids = children(span.spanContext().spanId);
    kids.forEach((kid, i) => walk(kid, root ? '' : `${prefix}${last ? '   ' : '│  '}`, i === kids.length - 1, false));
  };
  for (const root of children(undefined)) walk(root, '', true, true);
  return lines;
}

function format(value: unknown): string {
  return Array.isArray(value) ? `[${value.join(',')}]` : String(value);
}
