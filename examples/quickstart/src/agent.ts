import {
  createAgent,
  defineTool,
  Message,
  SessionStateError,
  type Agent,
  type AgentSession,
  type ChatClient,
  type ContextProvider,
  type EventHandler,
  type JsonObject,
  type SessionStore,
} from '@ctx/core';
import { createScriptedModel } from './scripted-model.js';

/** The agent's own instructions; providers add theirs after these. */
export const AGENT_INSTRUCTIONS =
  'You are a concise personal assistant. Use get_weather for weather questions and add_todo when the user asks to remember or add something.';

/** Who the demo user is. Seeded into the session on its first run; the session keeps it after that. */
export interface UserProfile {
  name: string;
  homeCity: string;
  units: 'metric' | 'imperial';
  style: string;
}

/** The profile a new session starts with. */
export const DEFAULT_PROFILE: UserProfile = { name: 'Ada', homeCity: 'Lisbon', units: 'metric', style: 'short answers' };

/** One item of the todo list. */
export interface TodoItem extends JsonObject {
  text: string;
  addedAt: string;
}

/** Made-up weather for the cities the demo asks about; other cities get made-up values from a hash of the name. */
const KNOWN_WEATHER: Record<string, { tempC: number; condition: string; windKph: number }> = {
  lisbon: { tempC: 24, condition: 'sunny', windKph: 14 },
  oslo: { tempC: 6, condition: 'light rain', windKph: 18 },
  kyoto: { tempC: 17, condition: 'partly cloudy', windKph: 7 },
  nairobi: { tempC: 26, condition: 'sunny', windKph: 11 },
  lima: { tempC: 19, condition: 'overcast', windKph: 9 },
  reykjavik: { tempC: 4, condition: 'showers', windKph: 31 },
};
const CONDITIONS = ['sunny', 'partly cloudy', 'overcast', 'light rain', 'windy', 'showers'];

/** Deterministic demo weather: the same city always gets the same answer. */
export const getWeather = defineTool<{ city: string }>({
  name: 'get_weather',
  description: 'Current weather for a city (demo data).',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string', description: 'City name, e.g. "Oslo"' } },
    required: ['city'],
    additionalProperties: false,
  },
  execute: ({ city }) => {
    const name = city.trim();
    const known = KNOWN_WEATHER[name.toLowerCase()];
    if (known) return { city: name, ...known };
    let hash = 2166136261;
    for (const ch of name.toLowerCase()) hash = Math.imul(hash ^ ch.charCodeAt(0), 16777619) >>> 0;
    return {
      city: name,
      tempC: (hash % 28) + 2,
      condition: CONDITIONS[(hash >>> 8) % CONDITIONS.length]!,
      windKph: 3 + ((hash >>> 16) % 30),
    };
  },
});

/** Appends to the todo list kept in the todos provider's slot of the session (`session.state.todos`). */
export const addTodo = defineTool<{ text: string }>({
  name: 'add_todo',
  description: "Adds an item to the user's todo list.",
  parameters: {
    type: 'object',
    properties: { text: { type: 'string', description: 'What to do' } },
    required: ['text'],
    additionalProperties: false,
  },
  execute: ({ text }, { session }) => {
    const items = todoItems(session.stateOf(TODOS_ID));
    items.push({ text, addedAt: new Date().toISOString() });
    return { added: text, count: items.length };
  },
});

/** The agent's own tools; the todos provider adds `add_todo` per run. */
export const AGENT_TOOLS = [getWeather];

/**
 * Injects the user's profile as instructions. The profile lives in the session (`state.profile`),
 * seeded from `defaults` on the session's first run.
 */
export function profileProvider(defaults: UserProfile = DEFAULT_PROFILE): ContextProvider {
  return {
    sourceId: 'profile',
    beforeRun({ context, state }) {
      for (const [key, value] of Object.entries(defaults)) state[key] ??= value;
      context.extendInstructions(
        'profile',
        `User profile: name=${state.name}; home city=${state.homeCity}; units=${state.units}; style=${state.style}.`,
      );
    },
  };
}

const TODOS_ID = 'todos';

/**
 * Owns the todo list: contributes the `add_todo` tool and, when the list is not empty, a context
 * message listing it, so the model can answer "what's on my list?" without a tool call.
 */
export const todosProvider: ContextProvider = {
  sourceId: TODOS_ID,
  beforeRun({ context, state }) {
    context.extendTools(TODOS_ID, [addTodo]);
    const items = todoItems(state);
    if (items.length)
      context.extendMessages(TODOS_ID, [Message.system(`The user's todo list:\n${items.map((t, i) => `${i + 1}. ${t.text}`).join('\n')}`)]);
  },
  validateState(state, path) {
    if (state.items === undefined) return;
    if (!Array.isArray(state.items)) throw new SessionStateError(`${path}.items`, 'must be an array');
    state.items.forEach((item, i) => {
      if (typeof (item as Partial<TodoItem> | null)?.text !== 'string')
        throw new SessionStateError(`${path}.items[${i}].text`, 'must be a string');
    });
  },
};

/** Counts turns (only successful ones) and tells the model which turn this is and what time it is. */
export function clockProvider(now: () => Date = () => new Date()): ContextProvider {
  return {
    sourceId: 'clock',
    // Changes every run: placed after the history, so the start of the prompt stays cacheable.
    stability: 'per-run',
    beforeRun({ context, state }) {
      const time = now().toISOString();
      state.startedAt ??= time;
      context.extendInstructions(
        'clock',
        `This is turn ${Number(state.turns ?? 0) + 1} of a conversation that started ${state.startedAt}. It is now ${time}.`,
      );
    },
    afterRun({ context, state }) {
      if (context.error !== undefined) return;
      state.turns = Number(state.turns ?? 0) + 1;
    },
  };
}

/** The todo list of a session (empty when none was started). */
export function readTodos(session: AgentSession): string[] {
  return todoItems(session.state[TODOS_ID] ?? {}).map((t) => t.text);
}

/** How many turns a session has completed. */
export function readTurns(session: AgentSession): number {
  return Number(session.state.clock?.turns ?? 0);
}

function todoItems(state: JsonObject): TodoItem[] {
  if (!Array.isArray(state.items)) state.items = [];
  return state.items as TodoItem[];
}

/** What `createQuickstartAgent` needs. */
export interface QuickstartAgentOptions {
  client: ChatClient;
  sessionStore: SessionStore;
  onEvent?: EventHandler;
  profile?: UserProfile;
}

/**
 * The demo agent: `get_weather` as its own tool, and three providers (profile, todos, clock). Core
 * adds its default in-session history (`memory`) in front of them, because none of them loads history.
 */
export function createQuickstartAgent({ client, sessionStore, onEvent, profile }: QuickstartAgentOptions): Agent {
  return createAgent({
    name: 'quickstart',
    client,
    instructions: AGENT_INSTRUCTIONS,
    tools: AGENT_TOOLS,
    contextProviders: [profileProvider(profile), todosProvider, clockProvider()],
    sessionStore,
    ...(onEvent ? { onEvent } : {}),
  });
}

/** A chat client and, when it fell back to the scripted model although a real one was asked for, why. */
export interface ChosenClient {
  client: ChatClient;
  note?: string;
}

/**
 * The real model (via `@ctx/openai`) when `OPENAI_API_KEY` or `OPENAI_BASE_URL` is set; the offline
 * scripted model otherwise. `OPENAI_MODEL` picks the model (default `gpt-4o-mini`).
 */
export async function chooseClient(env: NodeJS.ProcessEnv = process.env): Promise<ChosenClient> {
  if (!env.OPENAI_API_KEY && !env.OPENAI_BASE_URL) return { client: createScriptedModel() };
  const model = env.OPENAI_MODEL ?? 'gpt-4o-mini';
  const { OpenAIChatClient } = await import('@ctx/openai');
  return { client: new OpenAIChatClient({ model, apiKey: env.OPENAI_API_KEY ?? 'unused' }), note: `Using ${model} through @ctx/openai.` };
}
