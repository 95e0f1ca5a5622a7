export * from './attempt';
export * from './decision';
export * from './duration.util';
export * from './errors';
export * from './keys.util';
export * from './limiter';
export * from './policy';
export * from './clock.util';
