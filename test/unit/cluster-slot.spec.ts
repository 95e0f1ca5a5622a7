import { clusterSlot } from '../../lib/stores/cluster-slot.util';

// Each slot below is what a Redis 7 server with cluster support answers to `CLUSTER KEYSLOT`.
describe('clusterSlot', () => {
  it.each([
    ['123456789', 12739], // CRC16/XMODEM's check value, 0x31C3
    ['foo', 12182],
    ['{}foo', 9500], // an empty tag: the whole key is hashed
    // The first '}' after the first '{' ends the tag, even when that leaves it empty: the whole
    // key is hashed, not the text up to a later '}' (cluster-key-slot 1.1.x answers 0 and 11409).
    ['{}}', 14790],
    ['a{}{key}:p:0', 2502],
  ])('gives %j the slot Redis gives it (%i)', (key, slot) => {
    expect(clusterSlot(key)).toBe(slot);
  });

  it('hashes only the tag when it is not empty', () => {
    expect(clusterSlot('rl:{ip:203.0.113.7}:login:0')).toBe(clusterSlot('ip:203.0.113.7'));
    expect(clusterSlot('{user1000}.following')).toBe(clusterSlot('{user1000}.followers'));
  });
});
