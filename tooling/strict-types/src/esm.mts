// Every entry point of every published package, through the `import` condition (dist/*.d.ts).
import * as aiSdk from '@ctx/ai-sdk';
import * as azureSearch from '@ctx/azure-search';
import * as core from '@ctx/core';
import * as backend from '@ctx/core/backend';
import * as jsonSchema from '@ctx/core/json-schema';
import * as testing from '@ctx/core/testing';
import * as cosmos from '@ctx/cosmos';
import * as mem0 from '@ctx/mem0';
import * as openai from '@ctx/openai';
import * as tokenizer from '@ctx/openai/tokenizer';
import * as openaiAgents from '@ctx/openai-agents';
import * as otel from '@ctx/otel';
import * as providerTests from '@ctx/provider-tests';
import * as redis from '@ctx/redis';

export const entries = [
  aiSdk,
  azureSearch,
  core,
  backend,
  jsonSchema,
  testing,
  cosmos,
  mem0,
  openai,
  tokenizer,
  openaiAgents,
  otel,
  providerTests,
  redis,
];
