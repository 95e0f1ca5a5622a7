// The store contract lives in lib/core (the limiter is written against it); stores import it here.
export * from '../core/store';
