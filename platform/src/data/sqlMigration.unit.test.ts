import { sqlMigration } from './sqlMigration';

describe('sqlMigration', () => {
  const Migration = sqlMigration('Widgets1764460899999', {
    up: ['CREATE TABLE widgets (id uuid PRIMARY KEY)', 'CREATE INDEX widgets_id ON widgets (id)'],
    down: ['DROP TABLE widgets'],
  });

  it('carries its name on the instance (TypeORM reads the timestamp off it) and on the class', () => {
    expect(new Migration().name).toBe('Widgets1764460899999');
    expect(Migration.name).toBe('Widgets1764460899999');
  });

  it('runs each side’s statements one after another, in order', async () => {
    const sent: string[] = [];
    const runner = { query: async (sql: string) => void sent.push(sql) };
    await new Migration().up(runner);
    await new Migration().down(runner);
    expect(sent).toEqual(['CREATE TABLE widgets (id uuid PRIMARY KEY)', 'CREATE INDEX widgets_id ON widgets (id)', 'DROP TABLE widgets']);
  });

  it('waits for a statement before sending the next, and stops at the first that fails', async () => {
    const sent: string[] = [];
    const runner = {
      query: async (sql: string) => {
        await new Promise((resolve) => setTimeout(resolve, sent.length === 0 ? 10 : 0));
        sent.push(sql);
        if (sql.startsWith('CREATE TABLE')) throw new Error('relation "widgets" already exists');
      },
    };
    await expect(new Migration().up(runner)).rejects.toThrow('already exists');
    expect(sent).toEqual(['CREATE TABLE widgets (id uuid PRIMARY KEY)']);
  });
});
