"""The ``t2ireason`` subcommands, a module each group (:mod:`t2ireason.cli` is the command itself): each module
defines its commands' options (``add_<name>_args``) and runs them (``run_<name>``) by calling the library, and
:mod:`.options` holds what several share. The top of the layers: the library never imports these modules."""
