/**
 * An app whose `@Attempt` asks for trusted devices fails to start without the module's `devices`
 * option: a route that promises the owner a way in must not quietly go without one.
 */
import { Body, Controller, Module, Post } from '@nestjs/common';
import { Attempt, RedlimitModule } from '../../../lib/nest';
import { PLATFORMS, startApp } from '../support/app';

@Controller()
class SignInController {
  @Post('sign-in')
  signIn(
    @Body() _body: unknown,
    @Attempt(['ip', 'body.email'], { policy: 'login', devices: true }) _attempt: Attempt,
  ): void {}
}

const policies = { login: { algorithm: 'fixed-window', limit: 5, window: '15m' } } as const;

@Module({
  imports: [RedlimitModule.forRoot({ keySecret: 'a key secret of 32 characters!!', policies })],
  controllers: [SignInController],
})
class WithoutDevices {}

@Module({
  imports: [
    RedlimitModule.forRoot({ keySecret: 'a key secret of 32 characters!!', policies, devices: {} }),
  ],
  controllers: [SignInController],
})
class WithDevices {}

describe.each(PLATFORMS)('@Attempt devices at startup on %s', (platform) => {
  it('fails the start without the module option, naming the route and the option', async () => {
    await expect(startApp(WithoutDevices, platform)).rejects.toThrow(
      /SignInController\.signIn .* needs RedlimitModule's devices option/,
    );
  });

  it('starts with it', async () => {
    const app = await startApp(WithDevices, platform);
    await app.close();
  });
});
