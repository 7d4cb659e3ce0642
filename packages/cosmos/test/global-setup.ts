import type { TestProject } from 'vitest/node';
import { startCosmosStandIn } from '@ctx/cosmos-stand-in';

/** What the global setup hands to the tests (through vitest `provide` / `inject`). */
export interface CosmosTestEnvironment {
  /** `http://127.0.0.1:<port>` of the shared stand-in. */
  endpoint: string;
  /** The account key to pass (the stand-in accepts any). */
  key: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    cosmos: CosmosTestEnvironment;
  }
}

/** Starts one Cosmos DB stand-in on 127.0.0.1 and a free port for every test file; closes it at the end. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const standIn = await startCosmosStandIn();
  project.provide('cosmos', { endpoint: standIn.endpoint, key: standIn.key });
  return () => standIn.stop();
}
