export { startCosmosStandIn, STAND_IN_KEY } from './stand-in.js';
export type { CosmosStandIn } from './stand-in.js';
export { classifyRequest, startFaultProxy } from './fault-proxy.js';
export type { CosmosRequestKind, Fault, FaultProxy, FaultProxyOptions, FaultRule, ProxiedRequest } from './fault-proxy.js';
export { createGatewayEmulation } from './gateway.js';
export type { GatewayAnswer, GatewayDecision, GatewayEmulation } from './gateway.js';
export { effectivePartitionKey, planQuery } from './query-plan.js';
export type { PartitionKeyDefinitionLike, PlannedQuery, QueryPlan, QueryRange } from './query-plan.js';
