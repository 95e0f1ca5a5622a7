import {
  type CanActivate,
  Controller,
  Get,
  Inject,
  Post,
  Req,
  Res,
  type Type,
  UseGuards,
} from '@nestjs/common';
import { RedlimitBoard } from './redlimit-board.service';

/** The board's routes; {@link boardController} mounts them at the board's path. */
export class BoardRoutes {
  constructor(@Inject(RedlimitBoard) private readonly board: RedlimitBoard) {}

  @Get()
  policies(@Req() req: unknown, @Res() res: unknown): Promise<void> {
    return this.board.serve(req, res, '');
  }

  @Get('refusing')
  refusing(@Req() req: unknown, @Res() res: unknown): Promise<void> {
    return this.board.serve(req, res, 'refusing');
  }

  @Get('locked')
  locked(@Req() req: unknown, @Res() res: unknown): Promise<void> {
    return this.board.serve(req, res, 'locked');
  }

  @Get('key')
  keyForm(@Req() req: unknown, @Res() res: unknown): Promise<void> {
    return this.board.serve(req, res, 'key');
  }

  @Post('key')
  key(@Req() req: unknown, @Res() res: unknown): Promise<void> {
    return this.board.serve(req, res, 'key');
  }

  @Post('unlock')
  unlock(@Req() req: unknown, @Res() res: unknown): Promise<void> {
    return this.board.serve(req, res, 'unlock');
  }

  @Get('grant')
  grantForm(@Req() req: unknown, @Res() res: unknown): Promise<void> {
    return this.board.serve(req, res, 'grant');
  }

  @Post('grant')
  grant(@Req() req: unknown, @Res() res: unknown): Promise<void> {
    return this.board.serve(req, res, 'grant');
  }

  @Post('override')
  override(@Req() req: unknown, @Res() res: unknown): Promise<void> {
    return this.board.serve(req, res, 'override');
  }

  @Post('override-clear')
  overrideClear(@Req() req: unknown, @Res() res: unknown): Promise<void> {
    return this.board.serve(req, res, 'override-clear');
  }

  @Get('shadow')
  shadow(@Req() req: unknown, @Res() res: unknown): Promise<void> {
    return this.board.serve(req, res, 'shadow');
  }

  @Get('audit')
  audit(@Req() req: unknown, @Res() res: unknown): Promise<void> {
    return this.board.serve(req, res, 'audit');
  }

  @Get('assets/board.css')
  css(@Req() req: unknown, @Res() res: unknown): Promise<void> {
    return this.board.serve(req, res, 'assets/board.css');
  }

  @Get('assets/board.js')
  js(@Req() req: unknown, @Res() res: unknown): Promise<void> {
    return this.board.serve(req, res, 'assets/board.js');
  }
}

/** A controller class serving the board at `path`, behind `guard`. */
export function boardController(path: string, guard: Type<CanActivate>): Type<BoardRoutes> {
  @Controller(path)
  @UseGuards(guard)
  class RedlimitBoardController extends BoardRoutes {}
  return RedlimitBoardController;
}
