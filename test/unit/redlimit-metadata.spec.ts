import 'reflect-metadata';
import { readRedlimitMetadata, SkipThrottle, Throttle } from '../../lib/nest';
import { defineRedlimitMetadata } from '../../lib/nest/throttle/redlimit.metadata';

describe('readRedlimitMetadata: merged once, never stale', () => {
  it('answers the same frozen object while the metadata is unchanged', () => {
    @Throttle('api')
    class ItemsController {
      @Throttle('burst')
      list(): void {}
    }
    const first = readRedlimitMetadata(ItemsController.prototype.list, ItemsController);
    expect(first.throttle).toEqual([{ policy: 'api' }, { policy: 'burst' }]);
    expect(Object.isFrozen(first)).toBe(true);
    expect(readRedlimitMetadata(ItemsController.prototype.list, ItemsController)).toBe(first);
  });

  it('sees metadata written after a first read, on the handler or the controller', () => {
    class ItemsController {
      list(): void {}
    }
    const handler = ItemsController.prototype.list;
    expect(readRedlimitMetadata(handler, ItemsController).throttle).toBeUndefined();
    Throttle('api')(ItemsController);
    expect(readRedlimitMetadata(handler, ItemsController).throttle).toEqual([{ policy: 'api' }]);
    defineRedlimitMetadata(handler, { throttle: false });
    expect(readRedlimitMetadata(handler, ItemsController).throttle).toBe(false);
  });

  it('keeps one answer per controller for a handler two controllers share', () => {
    class BaseController {
      list(): void {}
    }
    @Throttle('a')
    class AController extends BaseController {}
    @SkipThrottle()
    class BController extends BaseController {}
    const handler = BaseController.prototype.list;
    expect(readRedlimitMetadata(handler, AController).throttle).toEqual([{ policy: 'a' }]);
    expect(readRedlimitMetadata(handler, BController).throttle).toBe(false);
    expect(readRedlimitMetadata(handler, AController).throttle).toEqual([{ policy: 'a' }]);
  });
});
