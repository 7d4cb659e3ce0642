export { startCosmosStandIn, STAND_IN_KEY } from './stand-in.js';
export type { CosmosStandIn } from './stand-in.js';
export { classifyRequest, startFaultProxy } from './fault-proxy.js';
export type { CosmosRequestKind, Fault, FaultProxy, FaultRule, ProxiedRequest } from './fault-proxy.js';
