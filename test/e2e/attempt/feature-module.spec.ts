import { Body, Controller, HttpCode, Module, Post, type Type } from '@nestjs/common';
import {
  type Attempt as AttemptType,
  Attempt,
  MemoryStore,
  RedlimitModule,
} from '../../../lib/nest';
import { PLATFORMS, type RunningApp, startApp, statuses } from '../support/app';

/** A feature module that does not import RedlimitModule: the root module does, not globally. */
@Controller('feature')
class FeatureController {
  @Post('sign-in')
  @HttpCode(201)
  signIn(
    @Body() _body: { email: string },
    @Attempt(['email'], { policy: 'login' }) _attempt: AttemptType,
  ) {
    return 'ok';
  }
}

@Module({ controllers: [FeatureController] })
class FeatureModule {}

function rootModule(): Type {
  @Module({
    imports: [
      RedlimitModule.forRoot({
        isGlobal: false,
        store: new MemoryStore(),
        policies: { login: { algorithm: 'fixed-window', limit: 3, window: '1m' } },
      }),
      FeatureModule,
    ],
  })
  class RootModule {}
  return RootModule;
}

describe.each(PLATFORMS)(
  '@Attempt in a feature module, RedlimitModule not global, on %s',
  (platform) => {
    let app: RunningApp;
    beforeEach(async () => {
      app = await startApp(rootModule(), platform);
    });
    afterEach(() => app.close());

    it('boots, and limits', async () => {
      const call = () =>
        app.request('/feature/sign-in', { method: 'POST', body: { email: 'a@b.c' } });
      const codes = await statuses([call(), call(), call()]);
      expect(codes).toEqual([201, 201, 201]);
      expect((await call()).status).toBe(429);
    });
  },
);
