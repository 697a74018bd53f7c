import { mentionsIn, route, type RoutableMessage, type RouteAgent } from './route';

const roster: RouteAgent[] = [
  { id: 'lead', handle: 'sw1-lead', botUserId: 'usr_lead', lead: true, active: true },
  { id: 'alice', handle: 'sw1-alice', botUserId: 'usr_alice', lead: false, active: true },
  { id: 'bob', handle: 'sw1-bob', botUserId: 'usr_bob', lead: false, active: true },
  { id: 'carol', handle: 'sw1-carol', botUserId: 'usr_carol', lead: false, active: true },
];
const HUMAN = 'usr_human';

const msg = (over: Partial<RoutableMessage>): RoutableMessage => ({ id: 'm1', authorId: HUMAN, authorKind: 'human', threadRootId: 'm1', mentions: [], ribPost: false, ...over });
const reply = (authorId: string, over: Partial<RoutableMessage> = {}) =>
  msg({ id: 'r1', threadRootId: 'root', authorId, authorKind: authorId === HUMAN ? 'human' : 'bot', ...over });

/** SWARM.md §3's routing table, one row per `describe`. */
describe('route()', () => {
  describe('| `@handle` mention | that agent (adds to every row) |', () => {
    it('wakes the mentioned agent on an agent\'s top-level post that would otherwise wake nobody', () => {
      expect(route({ message: msg({ authorId: 'usr_alice', authorKind: 'bot', mentions: ['sw1-bob'] }), roster, threadParticipants: [] })).toEqual(['bob']);
    });
    it('adds the mentioned agent to a reply\'s recipients, matching handles case-insensitively', () => {
      expect(route({ message: reply('usr_bob', { mentions: ['SW1-CAROL'] }), roster, threadParticipants: ['alice', 'bob'], threadStarter: 'alice' })).toEqual(['alice', 'carol']);
    });
    it('a human naming one agent at top level wakes that agent, not the lead', () => {
      expect(route({ message: msg({ mentions: ['sw1-alice'] }), roster, threadParticipants: [] })).toEqual(['alice']);
    });
  });

  describe('| reply by the agent that started the thread | every agent in the thread |', () => {
    it('wakes every other participant', () => {
      expect(route({ message: reply('usr_alice'), roster, threadParticipants: ['alice', 'bob', 'carol'], threadStarter: 'alice' })).toEqual(['bob', 'carol']);
    });
  });

  describe('| reply by any other agent | the thread\'s starter |', () => {
    it('wakes only the starter, not the other participants', () => {
      expect(route({ message: reply('usr_bob'), roster, threadParticipants: ['lead', 'bob', 'carol'], threadStarter: 'lead' })).toEqual(['lead']);
    });
  });

  describe('| reply by a human, or in a thread a human started | every agent in the thread |', () => {
    it('a human reply wakes every agent in the thread', () => {
      expect(route({ message: reply(HUMAN), roster, threadParticipants: ['lead', 'carol'], threadStarter: 'lead' })).toEqual(['lead', 'carol']);
    });
    it('an agent reply in a thread a human started wakes every other agent in it', () => {
      expect(route({ message: reply('usr_bob'), roster, threadParticipants: ['lead', 'bob'] })).toEqual(['lead']);
    });
    it('a bus user outside the roster (another bot) counts as a human', () => {
      expect(route({ message: reply('usr_stranger', { authorKind: 'bot' }), roster, threadParticipants: ['bob'], threadStarter: 'bob' })).toEqual(['bob']);
    });
  });

  describe('| human, top-level, unaddressed | the lead |', () => {
    it('wakes the lead (the kickoff and the operator\'s steer route this way)', () => {
      expect(route({ message: msg({}), roster, threadParticipants: [] })).toEqual(['lead']);
    });
    it('mentioning someone outside the roster still counts as unaddressed', () => {
      expect(route({ message: msg({ mentions: ['someone'] }), roster, threadParticipants: [] })).toEqual(['lead']);
    });
  });

  describe('| agent, top-level, unaddressed | nobody |', () => {
    it('wakes nobody, the lead included', () => {
      expect(route({ message: msg({ authorId: 'usr_bob', authorKind: 'bot' }), roster, threadParticipants: [] })).toEqual([]);
    });
  });

  describe('| the rib\'s own posts (run and gate notices) | nobody |', () => {
    it('wakes nobody, even when it names an agent', () => {
      expect(route({ message: msg({ ribPost: true, mentions: ['sw1-alice'] }), roster, threadParticipants: [] })).toEqual([]);
      expect(route({ message: reply(HUMAN, { ribPost: true }), roster, threadParticipants: ['lead'], threadStarter: 'lead' })).toEqual([]);
    });
  });

  describe('the author never wakes itself; inactive agents never wake', () => {
    it('drops the author from its own thread and from its own mention', () => {
      expect(route({ message: reply('usr_alice', { mentions: ['sw1-alice'] }), roster, threadParticipants: ['alice'], threadStarter: 'alice' })).toEqual([]);
    });
    it('never returns a capped or failed agent', () => {
      const capped = roster.map((a) => (a.id === 'lead' ? { ...a, active: false } : a));
      expect(route({ message: msg({}), roster: capped, threadParticipants: [] })).toEqual([]);
      expect(route({ message: reply(HUMAN), roster: capped, threadParticipants: ['lead', 'bob'], threadStarter: 'lead' })).toEqual(['bob']);
    });
    it('answers in roster order however the inputs are ordered', () => {
      expect(route({ message: reply(HUMAN, { mentions: ['sw1-alice'] }), roster, threadParticipants: ['carol', 'lead'] })).toEqual(['lead', 'alice', 'carol']);
    });
  });
});

describe('mentionsIn()', () => {
  it('finds @handles lower-cased and unique, in order', () => {
    expect(mentionsIn('@SW1-Bob please, then @sw1-alice and @sw1-bob again; mail@x is not one? (it is: x is too short)')).toEqual(['sw1-bob', 'sw1-alice']);
  });
});
