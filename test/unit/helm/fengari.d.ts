// The part of fengari (a Lua VM in JavaScript, no types of its own) that the Argo CD health
// check test uses.
declare module 'fengari' {
  type LuaState = { readonly __brand: 'lua_State' };
  export const lua: {
    LUA_OK: number;
    lua_gettop(L: LuaState): number;
    lua_tojsstring(L: LuaState, index: number): string | null;
    lua_close(L: LuaState): void;
  };
  export const lauxlib: {
    luaL_newstate(): LuaState;
    luaL_dostring(L: LuaState, code: Uint8Array): number;
  };
  export const lualib: { luaL_openlibs(L: LuaState): void };
  export function to_luastring(s: string): Uint8Array;
}
