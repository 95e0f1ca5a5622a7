/**
 * `redlimit` (the core) must load in an app that has no @nestjs packages installed; the Nest
 * layer lives behind `redlimit/nest`.
 */
describe('packaging', () => {
  const withoutNest = () => {
    for (const name of ['@nestjs/common', '@nestjs/core']) {
      jest.doMock(name, () => {
        throw new Error(`Cannot find module '${name}'`);
      });
    }
  };
  afterEach(() => {
    for (const name of ['@nestjs/common', '@nestjs/core']) jest.dontMock(name);
    jest.resetModules();
  });

  it('the core entry point loads without any @nestjs package', () => {
    jest.isolateModules(() => {
      withoutNest();
      const core = jest.requireActual<typeof import('../../../lib')>('../../../lib');
      expect(typeof core.Limiter).toBe('function');
      expect(typeof core.RedisStore).toBe('function');
    });
  });

  it('the Nest entry point needs @nestjs/common', () => {
    jest.isolateModules(() => {
      withoutNest();
      expect(() => void jest.requireActual<object>('../../../lib/nest')).toThrow(/@nestjs\/common/);
    });
  });

  it('the Nest entry point re-exports the core', () => {
    jest.isolateModules(() => {
      const nest = jest.requireActual<typeof import('../../../lib/nest')>('../../../lib/nest');
      expect(typeof nest.RedlimitModule).toBe('function');
      expect(typeof nest.Limiter).toBe('function');
      expect(typeof nest.Attempt).toBe('function');
    });
  });
});
