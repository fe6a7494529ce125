# Included by every interface package's project() (CMAKE_PROJECT_INCLUDE, set by
# build_interfaces.sh).
#
# Why: the ROS 2 message wheels export their "<pkg>__rosidl_generator_py" targets
# with the include directories of the machine the wheels were built on (its
# Python and NumPy headers, e.g. under /opt/python/...), which do not exist here;
# CMake then refuses every target that links them.  At the end of configuration
# (deferred: the targets are imported later, by find_package) every such imported
# target is given this Python's and this NumPy's header directories instead.
# Directories that exist are kept, so a ROS install's own exports are unchanged.

if(NOT Python3_EXECUTABLE)
  message(FATAL_ERROR "local_python.cmake: Python3_EXECUTABLE must be set")
endif()
execute_process(
  COMMAND "${Python3_EXECUTABLE}" -c
          "import sysconfig, numpy; print(sysconfig.get_paths()['include'] + ';' + numpy.get_include())"
  OUTPUT_VARIABLE _vsf_local_includes OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE _vsf_rc)
if(NOT _vsf_rc EQUAL 0)
  message(FATAL_ERROR "local_python.cmake: ${Python3_EXECUTABLE} cannot name its Python and NumPy headers")
endif()

function(_vsf_use_local_python_includes)
  get_directory_property(_targets IMPORTED_TARGETS)
  foreach(_t IN LISTS _targets)
    if(NOT _t MATCHES "__rosidl_generator_py$")
      continue()
    endif()
    get_target_property(_dirs ${_t} INTERFACE_INCLUDE_DIRECTORIES)
    if(NOT _dirs)
      set(_dirs "")
    endif()
    set(_kept "")
    set(_dropped FALSE)
    foreach(_d IN LISTS _dirs)
      if(EXISTS "${_d}")
        list(APPEND _kept "${_d}")
      else()
        set(_dropped TRUE)
      endif()
    endforeach()
    if(_dropped)
      list(APPEND _kept ${_vsf_local_includes})
      list(REMOVE_DUPLICATES _kept)
      set_target_properties(${_t} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_kept}")
    endif()
  endforeach()
endfunction()

cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _vsf_use_local_python_includes)
