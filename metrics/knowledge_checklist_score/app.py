import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load("knowledge_checklist_score")
launch_gradio_widget(module)
