import { BadRequestException, Body, Controller, Get, Post } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { Throttle } from '../lib/nest';

interface Link {
  id: string;
  url: string;
}

@Controller('links')
export class LinksController {
  private readonly links: Link[] = [];

  /** 10 per minute per client IP, sliding window (no burst at a window boundary). */
  @Post()
  @Throttle('links')
  create(@Body() body: { url?: unknown }): Link {
    if (typeof body?.url !== 'string' || !/^https?:\/\//.test(body.url)) {
      throw new BadRequestException('url must be an http(s) URL');
    }
    const link = { id: randomBytes(4).toString('hex'), url: body.url };
    this.links.push(link);
    return link;
  }

  /** No @Throttle: the app-wide guard applies the default policy ('api'). */
  @Get()
  list(): Link[] {
    return this.links;
  }
}
