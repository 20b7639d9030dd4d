from simreal.cli import main

raise SystemExit(main())
