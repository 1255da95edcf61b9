# Build flags every target of ours gets: warnings, -Werror in CI, sanitizers on request.
add_library(preflight_build_flags INTERFACE)
target_compile_options(preflight_build_flags INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align -Wformat=2 -Wimplicit-fallthrough)
if(PREFLIGHT_WERROR)
  target_compile_options(preflight_build_flags INTERFACE -Werror)
endif()
if(PREFLIGHT_SANITIZE)
  target_compile_options(preflight_build_flags INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(preflight_build_flags INTERFACE -fsanitize=address,undefined)
endif()
