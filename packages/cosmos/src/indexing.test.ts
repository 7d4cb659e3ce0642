import type { IndexingPolicy } from '@azure/cosmos';
import { ConfigurationError, Message } from '@ctx/core';
import { describe, expect, it } from 'vitest';
import { cosmosClient, uniqueId } from '../test/helpers.js';
import { CosmosHistoryProvider } from './cosmos-history-provider.js';
import { HISTORY_INDEXING_POLICY, SESSION_PARTITION_KEY } from './history-layout.js';
import { HISTORY_RANGE_INDEXES, missingRangeIndexes } from './indexing.js';

const missing = (policy: IndexingPolicy | undefined) => missingRangeIndexes(policy, HISTORY_RANGE_INDEXES).map((n) => n.path);
const policy = (included: string[], excluded: string[], mode: IndexingPolicy['indexingMode'] = 'consistent'): IndexingPolicy => ({
  indexingMode: mode,
  includedPaths: included.map((path) => ({ path })),
  excludedPaths: excluded.map((path) => ({ path })),
});

describe('missingRangeIndexes', () => {
  it.each([
    ['no policy (the service default)', undefined, []],
    ['the default policy', policy(['/*'], ['/"_etag"/?']), []],
    ['the policy ctx creates', HISTORY_INDEXING_POLICY, []],
    ['everything excluded', policy([], ['/*']), ['/seq/?', '/updatedAt/?']],
    ['indexing off', policy(['/*'], [], 'none'), ['/seq/?', '/updatedAt/?']],
    ['only the filter paths', policy(['/kind/?', '/sourceId/?', '/sessionKey/?'], ['/*']), ['/seq/?', '/updatedAt/?']],
    ['seq excluded under an included root', policy(['/*'], ['/seq/?']), ['/seq/?']],
    ['updatedAt excluded by a wildcard', policy(['/*'], ['/updatedAt/*']), ['/updatedAt/?']],
    ['a more specific inclusion under an exclusion', policy(['/seq/?', '/updatedAt/*'], ['/*']), []],
    ['quoted names', policy(['/"seq"/?', '/"updatedAt"/?'], ['/*']), []],
    ['a similar name is not the path', policy(['/seqNo/?', '/updatedAt/?'], ['/*']), ['/seq/?']],
    ['a nested path is not the property', policy(['/message/seq/?', '/updatedAt/?'], ['/*']), ['/seq/?']],
  ])('%s', (_, given, expected) => {
    expect(missing(given)).toEqual(expected);
  });

  it('a legacy hash index cannot sort', () => {
    const legacy = {
      indexingMode: 'consistent',
      includedPaths: [
        { path: '/seq/?', indexes: [{ kind: 'Hash', dataType: 'Number' }] },
        { path: '/updatedAt/?', indexes: [{ kind: 'Range', dataType: 'String' }] },
      ],
      excludedPaths: [{ path: '/*' }],
    } as IndexingPolicy;
    expect(missing(legacy)).toEqual(['/seq/?']);
  });
});

describe('a container created by the user', () => {
  const client = cosmosClient();
  const databaseId = uniqueId('indexing');

  async function containerWith(indexingPolicy?: IndexingPolicy): Promise<string> {
    const containerId = uniqueId('c');
    const { database } = await client.databases.createIfNotExists({ id: databaseId });
    await database.containers.create({
      id: containerId,
      partitionKey: SESSION_PARTITION_KEY,
      ...(indexingPolicy ? { indexingPolicy } : {}),
    });
    return containerId;
  }

  it('without a range index on /seq/? is refused before any history request, naming what is missing', async () => {
    const containerId = await containerWith(policy(['/kind/?', '/sourceId/?', '/sessionKey/?', '/updatedAt/?'], ['/*']));
    const provider = new CosmosHistoryProvider({ client, databaseId, containerId });
    const error = await provider.getMessages('s1', { state: {}, limit: 10 }).catch((e: unknown) => e);
    expect(ConfigurationError.isInstance(error)).toBe(true);
    expect((error as Error).message).toContain(`container ${databaseId}/${containerId} has no range index on /seq/?`);
    expect((error as Error).message).toContain('every window read and export (ORDER BY c.seq)');
    expect((error as Error).message).toContain('{ "path": "/seq/?" }');
    await expect(provider.saveMessages('s1', [Message.user('hi')], { state: {} })).rejects.toSatisfy(ConfigurationError.isInstance);
    expect((await client.database(databaseId).container(containerId).items.readAll().fetchAll()).resources).toEqual([]);
  });

  it('with indexing off names both sort paths; with the default policy it works', async () => {
    const off = new CosmosHistoryProvider({
      client,
      databaseId,
      containerId: await containerWith({ indexingMode: 'none', automatic: false }),
    });
    await expect(off.listSessions()).rejects.toThrow('has indexing off (indexingMode "none")');
    await expect(off.listSessions()).rejects.toThrow('listSessions (ORDER BY c.updatedAt)');
    const open = new CosmosHistoryProvider({ client, databaseId, containerId: await containerWith() });
    await open.saveMessages('s1', [Message.user('hi')], { state: {} });
    expect((await open.getMessages('s1', { state: {}, limit: 5 })).map(Message.text)).toEqual(['hi']);
  });
});
