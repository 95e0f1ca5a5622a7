import { atTurnEnd } from '../../lib/stores/turn-end';

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('atTurnEnd', () => {
  it('runs every send of a turn before any release, whatever order they were asked in', async () => {
    const ran: string[] = [];
    atTurnEnd('release', () => ran.push('release 1'));
    atTurnEnd('send', () => {
      ran.push('send 1');
      // A send may hold writes and queue more: both still run in this turn, sends first.
      atTurnEnd('release', () => ran.push('release 2'));
      atTurnEnd('send', () => ran.push('send 2'));
    });
    expect(ran).toEqual([]); // nothing before the end of the turn
    await nextTurn();
    expect(ran).toEqual(['send 1', 'send 2', 'release 1', 'release 2']);
  });
});
