import { describe, expect, it } from 'vitest';
import { runDemo } from './demo.js';

describe('otel-tracing demo', () => {
  it('prints the span tree of a streaming run with a provider and parallel tools', async () => {
    const lines: string[] = [];
    const { answer, spans } = await runDemo((line) => lines.push(line));
    expect(answer).toContain('Fly TP 557');
    expect(lines[0]).toBe(`Answer: ${answer}`);
    // Names and attributes, durations left out (they vary).
    const tree = lines.slice(2).map((l) => l.replace(/\s+\d+\.\d ms\s*/, ' | ').replace(/\s+\|/, ' |'));
    expect(tree.slice(0, -2)).toEqual([
      'invoke_agent trip-planner | gen_ai.provider.name=scripted gen_ai.request.model=gpt-4o-mini gen_ai.usage.input_tokens=513 gen_ai.usage.output_tokens=67 ctx.context.tokens=' +
        spans.find((s) => s.name === 'invoke_agent trip-planner')!.attributes['ctx.context.tokens'],
      '├─ beforeRun memory | ctx.provider.added.messages=0 ctx.provider.added.instructions=0 ctx.provider.added.tools=0',
      '├─ beforeRun guides | ctx.provider.added.messages=2 ctx.provider.added.instructions=0 ctx.provider.added.tools=0',
      '├─ beforeRun audit | ctx.provider.added.messages=0 ctx.provider.added.instructions=0 ctx.provider.added.tools=0',
      '├─ chat gpt-4o-mini | gen_ai.provider.name=scripted gen_ai.request.model=gpt-4o-mini gen_ai.usage.input_tokens=212 gen_ai.usage.output_tokens=38 gen_ai.response.finish_reasons=[tool_call]',
      '├─ execute_tool get_weather | gen_ai.tool.call.id=call_weather',
      '├─ execute_tool find_flights | gen_ai.tool.call.id=call_flights',
      '├─ chat gpt-4o-mini | gen_ai.provider.name=scripted gen_ai.request.model=gpt-4o-mini gen_ai.usage.input_tokens=301 gen_ai.usage.output_tokens=29 gen_ai.response.finish_reasons=[stop]',
    ]);
    // The two afterRun spans can start in the same clock tick, which leaves their order in the tree open.
    expect(
      tree
        .slice(-2)
        .map((l) => l.replace(/^[├└]─ /, ''))
        .sort(),
    ).toEqual([
      'afterRun audit | ctx.provider.added.messages=0 ctx.provider.added.instructions=0 ctx.provider.added.tools=0',
      'afterRun memory | ctx.provider.added.messages=0 ctx.provider.added.instructions=0 ctx.provider.added.tools=0',
    ]);
    // Every span is in the run's trace, and the two tools ran at the same time.
    expect(new Set(spans.map((s) => s.spanContext().traceId)).size).toBe(1);
    const [w, f] = ['execute_tool get_weather', 'execute_tool find_flights'].map((n) => spans.find((s) => s.name === n)!);
    const ms = (t: [number, number]) => t[0] * 1e3 + t[1] / 1e6;
    expect(ms(f!.startTime)).toBeLessThan(ms(w!.endTime));
  });
});
