/**
 * How long a spend can still weigh on anything under a policy (the longest of its limits'
 * lifetimes, each declared by its algorithm's definition in lib/core/algorithms/). The refund
 * ledger lives this long after its last write.
 */
export { stateLifetimeMs } from '../core/algorithms/algorithm.registry';
