import { Message, type ChatOptions, type FunctionResultContent, type JsonValue } from '@ctx/core';
import { ScriptedChatClient, type ScriptedReply, type ScriptedToolCall } from '@ctx/core/testing';

/**
 * An offline stand-in for a real model, built on core's `ScriptedChatClient`. It reads what the
 * pipeline sent (instructions, loaded history, the todo list message, the tool results) and
 * answers from it, so the demo shows the context at work without a network or an API key.
 */
export function createScriptedModel(): ScriptedChatClient {
  return new ScriptedChatClient({ modelId: 'scripted-demo-model', replies: (messages, options) => respond(messages, options) });
}

/** What the model reads back from the profile provider's instructions. */
interface ProfileView {
  name: string | undefined;
  homeCity: string | undefined;
  imperial: boolean;
}

/** Computes one reply: tool calls for requests it can act on, otherwise text built from the context. */
export function respond(messages: readonly Message[], options: ChatOptions): ScriptedReply {
  const profile = readProfile(options.instructions);
  const history = messages.filter((m) => Message.source(m)?.sourceType === 'history');
  const last = messages.at(-1);
  if (!last) return { text: 'Hello! What can I do for you?' };

  if (last.role === 'tool') {
    const results = last.contents.filter((c): c is FunctionResultContent => c.type === 'function-result');
    const hello = history.length === 0 && profile.name ? `Hi ${profile.name}! ` : '';
    return { text: hello + results.map((r) => describeResult(r, profile)).join(' ') };
  }

  const text = Message.text(last);
  const available = new Set((options.tools ?? []).map((t) => t.name));
  const calls: ScriptedToolCall[] = [];
  const weather = sentences(text).find((s) => /\b(weather|forecast|temperature)\b/i.test(s));
  if (weather && available.has('get_weather')) {
    calls.push({ name: 'get_weather', arguments: { city: cityIn(weather) ?? profile.homeCity ?? 'London' } });
  }
  const todo = todoIn(text);
  if (todo && available.has('add_todo')) calls.push({ name: 'add_todo', arguments: { text: todo } });
  if (calls.length) return { toolCalls: calls };

  if (/\b(last time|talk(ed)? about|remember|so far)\b/i.test(text)) return { text: recap(history, profile) };
  if (/\b(list|todos?|to-dos?)\b/i.test(text)) return { text: readTodoList(messages) };
  return {
    text: `Hi${profile.name ? ` ${profile.name}` : ''}! I can see ${plural(history.length, 'earlier message')}. Ask me about the weather or give me a todo.`,
  };
}

function readProfile(instructions: string | undefined): ProfileView {
  const field = (key: string) => instructions?.match(new RegExp(`\\b${key}=([^;\\n.]+)`))?.[1]?.trim();
  return { name: field('name'), homeCity: field('home city'), imperial: field('units') === 'imperial' };
}

function sentences(text: string): string[] {
  return text.split(/(?<=[.?!])\s+/);
}

function cityIn(sentence: string): string | undefined {
  return sentence.match(/\b(?:in|for|at)\s+([A-Z][\w-]*(?:\s+[A-Z][\w-]*)*)/)?.[1];
}

function todoIn(text: string): string | undefined {
  const found = text.match(/\b(?:add (?:a |an )?(?:todo|to-do|task)(?: item)?\s*[:,-]?\s*|remind me to\s+)(.+?)[.!?]*$/i)?.[1];
  return found?.trim() || undefined;
}

function describeResult(result: FunctionResultContent, profile: ProfileView): string {
  if (result.isError) return `I could not run ${result.name ?? 'a tool'}: ${errorText(result.result)}`;
  const value = (isObject(result.result) ? result.result : {}) as Record<string, JsonValue>;
  if (result.name === 'get_weather') {
    const tempC = Number(value.tempC);
    const windKph = Number(value.windKph);
    const temp = profile.imperial ? `${Math.round((tempC * 9) / 5 + 32)} °F` : `${tempC} °C`;
    const wind = profile.imperial ? `${Math.round(windKph / 1.609)} mph` : `${windKph} km/h`;
    const home = value.city === profile.homeCity ? ' (your home city)' : '';
    const advice = /rain|shower/.test(String(value.condition)) ? ' Take an umbrella.' : tempC >= 24 ? ' Sunscreen weather.' : '';
    return `${value.city}${home}: ${temp}, ${value.condition}, wind ${wind}.${advice}`;
  }
  if (result.name === 'add_todo') {
    return `Added "${value.added}", that makes ${plural(Number(value.count), 'todo')}.`;
  }
  return `${result.name} returned ${JSON.stringify(result.result)}.`;
}

/** Summarizes the loaded history: the proof that the earlier runs were restored. */
function recap(history: readonly Message[], profile: ProfileView): string {
  const who = profile.name ? `, ${profile.name}` : '';
  if (history.length === 0) return `This is our first conversation${who}: I see no earlier messages.`;
  const turns = history.filter((m) => m.role === 'user').length;
  const cities: string[] = [];
  const todos: string[] = [];
  for (const m of history) {
    for (const call of Message.functionCalls(m)) {
      const args = safeParse(call.arguments);
      if (call.name === 'get_weather' && typeof args.city === 'string' && !cities.includes(args.city)) cities.push(args.city);
      if (call.name === 'add_todo' && typeof args.text === 'string') todos.push(args.text);
    }
  }
  const did = [
    cities.length ? `checked the weather in ${cities.join(', ')}` : '',
    todos.length ? `you added ${plural(todos.length, 'todo')} (${todos.map((t) => `"${t}"`).join(', ')})` : '',
  ].filter(Boolean);
  return `Welcome back${who}! I can see ${plural(history.length, 'earlier message')} from ${plural(turns, 'turn')}.${did.length ? ` So far we ${did.join(' and ')}.` : ''}`;
}

/** Answers from the todo list message the todos provider injected (not from a tool). */
function readTodoList(messages: readonly Message[]): string {
  const injected = messages.find((m) => Message.source(m)?.sourceId === 'todos');
  const items = injected
    ? Message.text(injected)
        .split('\n')
        .filter((line) => /^\d+\. /.test(line))
        .map((line) => line.replace(/^\d+\. /, ''))
    : [];
  if (items.length === 0) return 'Your todo list is empty.';
  return `You have ${plural(items.length, 'todo')}: ${items.map((t, i) => `${i + 1}) ${t}`).join(' ')}`;
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

function isObject(value: JsonValue): value is { [key: string]: JsonValue } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function errorText(value: JsonValue): string {
  return isObject(value) && typeof value.error === 'string' ? value.error : JSON.stringify(value);
}

function safeParse(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
